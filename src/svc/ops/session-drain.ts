/**
 * The drain of svc's sessions on SIGTERM or `svc stop`
 * (docs/svc-drain.md#the-drain-sigterm-or-svc-stop; `running` to `interrupted` in
 * docs/svc.md#session-states): new work is refused, every incident with a turn in flight is marked
 * `interrupted` durably BEFORE the wait (a marker row, interruption-rows.ts, so it survives a kill
 * -9 mid-drain), the turns get the drain window, a turn that ends inside it clears its marker; when
 * the window expires the rest are cancelled, and a survivor found parked at an approval is cleared
 * too (it reports `paused`). Under `--pause-sessions` every marked session is handed to the
 * SessionPauser. Resolves with who survived: the exit code is 3 when any did.
 */
import type { SessionKey } from "../../core/session-key.ts";
import type { Logger } from "../../telemetry/logger.ts";
import type { SessionStatus } from "../listener/listener-port.ts";
import { type InterruptionCause, clearedRow, interruptedRow } from "./interruption-rows.ts";
import type { OpsJournal } from "./ops-journal.ts";
import type { SessionPauser } from "./session-pauser.ts";

export interface DrainDeps {
  /** The runtime core's session host: refuse new work, and the turns in flight. */
  host: {
    refuseNewWork(): void;
    turnsInFlight(): Array<{ key: SessionKey; settled: Promise<void> }>;
  };
  /** Cancel every turn still in flight (resolves once they ended, or gives up after a grace). */
  cancelRest(): Promise<void>;
  ops: OpsJournal;
  /** The apps of the workload's sessions: the coordinator's (`svc`) and its specialists' (`svc.<name>`). */
  coordinatorApp: string;
  status(sessionId: string): Promise<SessionStatus>;
  pauser: SessionPauser;
  logger: Logger;
}

export interface DrainOutcome {
  /** Incidents marked `interrupted` (a turn was in flight). */
  marked: string[];
  /** Marked incidents whose turn outlived the window: their marker stays. */
  survivors: string[];
  /** True when the window expired with turns still running. */
  expired: boolean;
}

/** The drain: mark, wait up to `windowMs`, clear what finished, cancel the rest. */
export async function drainSessions(
  deps: DrainDeps,
  cause: InterruptionCause,
  windowMs: number,
): Promise<DrainOutcome> {
  deps.host.refuseNewWork();
  const inFlight = deps.host.turnsInFlight();
  const byIncident = new Map<string, Promise<void>[]>();
  for (const { key, settled } of inFlight) {
    if (key.app !== deps.coordinatorApp && !key.app.startsWith(`${deps.coordinatorApp}.`)) continue;
    byIncident.set(key.id, [...(byIncident.get(key.id) ?? []), settled]);
  }
  const marked = await markAll(deps, [...byIncident.keys()], cause);
  let windowOpen = true;
  const clearing: Promise<unknown>[] = [];
  const cleared = new Set<string>();
  for (const sessionId of marked) {
    const settled = Promise.all(byIncident.get(sessionId) ?? []);
    void settled.then(
      () => {
        if (!windowOpen) return;
        cleared.add(sessionId);
        clearing.push(clear(deps, sessionId, "the turn finished inside the drain window"));
      },
      () => undefined,
    );
  }
  const finished = await settledWithin(
    inFlight.map((entry) => entry.settled),
    windowMs,
  );
  windowOpen = false;
  if (!finished) {
    deps.logger.warn(`turns still running after the ${windowMs / 1000} s drain window: cancelled`);
    await deps.cancelRest();
  }
  await Promise.all(clearing);
  const survivors: string[] = [];
  for (const sessionId of marked) {
    if (cleared.has(sessionId)) continue;
    if (await parkedAtApproval(deps, sessionId)) await clear(deps, sessionId, "paused at an approval");
    else survivors.push(sessionId);
  }
  if (cause.pauseRequested) await pauseAll(deps, marked, cause.reason);
  if (survivors.length > 0)
    deps.logger.warn(`sessions left interrupted (their marker stays for auto-resume): ${survivors.join(", ")}`);
  return { marked, survivors, expired: !finished };
}

/** Write every marker (in parallel) before anything waits; an incident whose marker failed is not counted as marked. */
async function markAll(deps: DrainDeps, sessionIds: string[], cause: InterruptionCause): Promise<string[]> {
  const written = await Promise.all(
    sessionIds.map((sessionId) =>
      deps.ops
        .append(sessionId, (header) => interruptedRow(header, cause))
        .catch((error: unknown) => {
          deps.logger.error(`session ${sessionId}: the interruption marker could not be written: ${String(error)}`);
          return false;
        }),
    ),
  );
  const marked = sessionIds.filter((_, index) => written[index]);
  if (marked.length > 0)
    deps.logger.info(`draining (${cause.reason}): marked interrupted before waiting: ${marked.join(", ")}`);
  return marked;
}

async function clear(deps: DrainDeps, sessionId: string, why: string): Promise<void> {
  await deps.ops
    .append(sessionId, (header) => clearedRow(header, why))
    .catch((error: unknown) => {
      deps.logger.error(`session ${sessionId}: the interruption marker could not be cleared: ${String(error)}`);
    });
}

async function parkedAtApproval(deps: DrainDeps, sessionId: string): Promise<boolean> {
  try {
    return (await deps.status(sessionId)).state === "paused";
  } catch (error) {
    deps.logger.error(`session ${sessionId}: its state could not be read after the drain: ${String(error)}`);
    return false;
  }
}

async function pauseAll(deps: DrainDeps, sessionIds: string[], reason: string): Promise<void> {
  if (sessionIds.length === 0) return;
  for (const sessionId of sessionIds)
    await deps.pauser.pauseSession(sessionId, reason).then(
      () =>
        deps.logger.info(`--pause-sessions: ${sessionId} gate-paused (pause it again for a resume token, or abort it)`),
      (error: unknown) => {
        deps.logger.error(`session ${sessionId}: --pause-sessions could not pause it: ${String(error)}`);
      },
    );
}

/** True once every promise settled within `windowMs`, false when the window ran out first. */
async function settledWithin(promises: Promise<void>[], windowMs: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), windowMs);
  });
  try {
    return await Promise.race([Promise.all(promises).then(() => true), expired]);
  } finally {
    clearTimeout(timer);
  }
}
