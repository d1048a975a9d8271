/**
 * Boot auto-resume (`--auto-resume`; docs/svc-drain.md#boot-auto-resume): once at startup, every
 * incident whose coordinator session carries an uncleared interruption marker
 * (interruption-rows.ts) is settled with exactly one outcome, counted by the caller:
 * `skipped_unsupported` (not coordinator dispatch, or a dangling delegation to an agent the roster
 * no longer has), `skipped_stale` (marked before the window), `skipped_superseded` (another turn
 * took the session on since, also between the scan and the turn), `skipped_loopbreak` (3 attempts
 * in 10 minutes; the attempt row is committed before the turn), `skipped_ambiguous` (a mutating
 * call whose effect is unknown: left for `ack-effects`), `cleared` (the transcript already ends on
 * a completed model turn), `resumed` (dangling read-only calls answered `interrupted before
 * completion`, then one continuation turn through the same path as an inject). At most 50 turns per
 * boot; aborted sessions and those `svc stop --pause-sessions` marked are left alone. The turns run
 * in the background; their end clears the marker.
 */
import type { CommittedRow } from "../../core/events.ts";
import type { SessionKey } from "../../core/session-key.ts";
import type { InterruptionClaim, SessionRecord } from "../../core/session-store.ts";
import type { SessionState } from "../listener/listener-port.ts";
import {
  AUTORESUME_PROMPT,
  type Interruption,
  attemptRow,
  clearedRow,
  interruptionState,
} from "./interruption-rows.ts";
import type { OpsJournal } from "./ops-journal.ts";
import type { DanglingRepair, SessionRepair } from "./session-repair.ts";

export const AUTORESUME_OUTCOMES = [
  "resumed",
  "cleared",
  "skipped_stale",
  "skipped_ambiguous",
  "skipped_unsupported",
  "skipped_loopbreak",
  "skipped_superseded",
] as const;
export type AutoResumeOutcome = (typeof AUTORESUME_OUTCOMES)[number];

/** At most this many continuation turns per boot (docs/svc-drain.md#boot-auto-resume). */
export const MAX_TURNS_PER_BOOT = 50;
/** The loop breaker: this many attempts within the window stop auto-resume for the session. */
export const LOOPBREAK_ATTEMPTS = 3;
export const LOOPBREAK_WINDOW_MS = 10 * 60_000;
/** A claim on an interruption lapses after this long (a second daemon on the store may take it then). */
const CLAIM_TTL_MS = 10 * 60_000;

export interface AutoResumeDeps {
  ops: OpsJournal;
  repair: SessionRepair;
  /** Only coordinator dispatch is driven. */
  coordinatorDispatch: boolean;
  /** Only markers at most this old (0: no window). */
  windowMs: number;
  /** The incidents' coordinator sessions. */
  sessions(): Promise<SessionRecord[]>;
  state(sessionId: string): Promise<SessionState>;
  head(key: SessionKey): Promise<number>;
  /** The store's claim (a second daemon on the same store stands down). */
  claim(key: SessionKey, claim: InterruptionClaim): Promise<boolean>;
  bootId: string;
  /** Run the continuation turn; resolves once it has ended (rejects when it failed). */
  runTurn(sessionId: string, message: string): Promise<void>;
  /** True once the daemon is draining (a turn cut by it keeps its new marker). */
  draining(): boolean;
  count(outcome: AutoResumeOutcome): void;
  log(message: string): void;
  now(): Date;
}

interface Candidate {
  record: SessionRecord;
  marker: Interruption;
  attempts: string[];
  rows: CommittedRow[];
}

/** Scan and settle every interrupted incident; resolves once each has its outcome (turns run on in the background). */
export async function autoResume(deps: AutoResumeDeps): Promise<Map<string, AutoResumeOutcome>> {
  const outcomes = new Map<string, AutoResumeOutcome>();
  const candidates: Candidate[] = [];
  for (const record of await deps.sessions()) {
    if (record.abort) continue;
    const rows = await deps.ops.rows(record.id);
    const { marker, attempts } = interruptionState(rows);
    if (marker === undefined) continue;
    if (marker.pauseRequested) {
      deps.log(`auto-resume: ${record.id} was paused by svc stop --pause-sessions: left to the operator`);
      continue;
    }
    candidates.push({ record, marker, attempts, rows });
  }
  candidates.sort((a, b) => a.marker.at.localeCompare(b.marker.at));
  let turns = 0;
  for (const candidate of candidates) {
    const id = candidate.record.id;
    if (turns >= MAX_TURNS_PER_BOOT) {
      deps.log(
        `auto-resume: the per-boot cap of ${MAX_TURNS_PER_BOOT} turns is reached: ${id} waits for the next boot`,
      );
      continue;
    }
    const outcome = await settle(deps, candidate).catch((error: unknown) => {
      deps.log(`auto-resume: ${id}: ${String(error)}`);
      return undefined;
    });
    if (outcome === undefined) continue;
    if (outcome === "resumed") turns++;
    outcomes.set(id, outcome);
    deps.count(outcome);
    deps.log(`auto-resume: ${id} (${candidate.marker.reason}): ${outcome}`);
  }
  return outcomes;
}

/** The outcome of one interrupted incident; undefined when it is left alone uncounted (paused, claimed elsewhere). */
async function settle(deps: AutoResumeDeps, candidate: Candidate): Promise<AutoResumeOutcome | undefined> {
  const { record, marker } = candidate;
  const id = record.id;
  if (!deps.coordinatorDispatch) return "skipped_unsupported";
  const now = deps.now().getTime();
  if (deps.windowMs > 0 && now - Date.parse(marker.at) > deps.windowMs) return "skipped_stale";
  if (marker.supersededAt !== undefined) return await clearAs(deps, id, "skipped_superseded");
  const recent = candidate.attempts.filter((at) => now - Date.parse(at) < LOOPBREAK_WINDOW_MS);
  if (recent.length >= LOOPBREAK_ATTEMPTS) return "skipped_loopbreak";
  const state = await deps.state(id);
  if (state === "paused") {
    deps.log(`auto-resume: ${id} waits on an operator's answer (paused): left alone`);
    return undefined;
  }
  if (state === "ambiguous") return "skipped_ambiguous";
  const plan = await deps.repair.plan(id);
  if (plan.kind === "unsupported") return "skipped_unsupported";
  if (plan.kind === "completed") return await clearAs(deps, id, "cleared");
  return await resume(deps, candidate, plan.repairs, recent.length);
}

async function resume(
  deps: AutoResumeDeps,
  candidate: Candidate,
  repairs: DanglingRepair[],
  attempt: number,
): Promise<AutoResumeOutcome | undefined> {
  const id = candidate.record.id;
  const key = deps.ops.key(id);
  const at = deps.now();
  // One claim per attempt: a daemon that died in its attempt leaves the next attempt free to claim.
  const claimed = await deps.claim(key, {
    interruption: `${candidate.marker.id}#${attempt + 1}`,
    owner: deps.bootId,
    now: at.toISOString(),
    expiresAt: new Date(at.getTime() + CLAIM_TTL_MS).toISOString(),
  });
  if (!claimed) {
    deps.log(`auto-resume: ${id}: another daemon holds the claim on this interruption: left to it`);
    return undefined;
  }
  // An inject that took the session on between the scan and now supersedes the resume.
  const scannedHead = candidate.rows[candidate.rows.length - 1]?.seq ?? 0;
  if ((await deps.head(key)) !== scannedHead) return await clearAs(deps, id, "skipped_superseded");
  // The loop breaker's counter is durable before the turn can start.
  await deps.ops.append(id, (header) => attemptRow(header, attempt + 1, deps.bootId));
  await deps.repair.apply(repairs);
  void deps.runTurn(id, AUTORESUME_PROMPT).then(
    () => clearMarker(deps, id, "the auto-resume turn ended"),
    (error: unknown) => {
      if (deps.draining()) return;
      return clearMarker(deps, id, `the auto-resume turn failed: ${String(error)}`);
    },
  );
  return "resumed";
}

async function clearAs(deps: AutoResumeDeps, id: string, outcome: AutoResumeOutcome): Promise<AutoResumeOutcome> {
  await deps.ops.append(id, (header) => clearedRow(header, `auto-resume: ${outcome}`));
  return outcome;
}

async function clearMarker(deps: AutoResumeDeps, id: string, why: string): Promise<void> {
  await deps.ops
    .append(id, (header) => clearedRow(header, why))
    .then(
      () => deps.log(`auto-resume: ${id}: marker cleared (${why})`),
      (error: unknown) => deps.log(`auto-resume: ${id}: the marker could not be cleared: ${String(error)}`),
    );
}
