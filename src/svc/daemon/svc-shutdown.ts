/**
 * svc's shutdown, on SIGTERM or POST /stop (svc stop): the drain of its sessions
 * (src/svc/ops/session-drain.ts: markers before the wait, the drain window, cancel the rest),
 * then the unwind (the turns' cancellation, the main and attach listeners, the runtime core, the
 * audit log, a private store, then the telemetry flush within its 3 s) under the teardown watchdog. Resolves with the daemon's exit code
 * (docs/svc-drain.md#exit-codes): 0 clean drain, 3 the window expired with interrupted survivors, 4 the unwind
 * hung past 15 s (what is still open is printed first).
 */
import { hangpoint } from "../../runtime/failpoint.ts";
import type { SvcRuntime } from "../dispatch/svc-runtime.ts";
import type { InterruptionCause } from "../ops/interruption-rows.ts";
import { OpsJournal } from "../ops/ops-journal.ts";
import { drainSessions } from "../ops/session-drain.ts";
import type { SessionPauser } from "../ops/session-pauser.ts";
import { watchTeardown } from "../ops/teardown-watchdog.ts";
import type { Logger } from "../../telemetry/logger.ts";
import type { RuntimeCore } from "../../daemon/runtime-core.ts";

/** Exit codes of the daemon (docs/svc-drain.md#exit-codes). */
export const EXIT_CLEAN = 0;
export const EXIT_ERROR = 1;
export const EXIT_SURVIVORS = 3;
export const EXIT_TEARDOWN_WATCHDOG = 4;

/** The failpoint that makes the unwind hang (tests of the teardown watchdog). */
export const TEARDOWN_HANGPOINT = "svc.teardown.hang";

export interface SvcShutdownParts {
  core: RuntimeCore;
  runtime: SvcRuntime;
  server: ReturnType<typeof Bun.serve>;
  /** The attach listener's drain, when it runs. */
  drainAttach?: (timeoutMs: number) => Promise<void>;
  /** Close the audit log and remove a private store: the last steps. */
  release(): void;
  pauser: SessionPauser;
  /** Flushed last, within 3 s (docs/telemetry.md#shutdown), so the drain's own spans leave too. */
  telemetry?: { shutdown(): Promise<void> };
  windowMs: number;
  logger: Logger;
  /** Where the watchdog's report goes (stderr). */
  write(text: string): void;
}

/** The drain, then the unwind under the watchdog; resolves with the exit code. */
export async function shutdownSvc(parts: SvcShutdownParts, cause: InterruptionCause): Promise<number> {
  const { core, runtime, logger } = parts;
  const ops = new OpsJournal({
    coordinatorApp: runtime.roster.coordinator.app,
    executorSession: (key) => runtime.queries.executorSession(key),
    log: core.store,
  });
  const drained = await drainSessions(
    {
      host: core.host,
      cancelRest: () => Promise.race([core.beginShutdown(), Bun.sleep(2000)]),
      ops,
      coordinatorApp: runtime.roster.coordinator.app,
      status: (sessionId) => runtime.queries.status(sessionId),
      pauser: parts.pauser,
      logger,
    },
    cause,
    parts.windowMs,
  );
  const unwind = (async () => {
    await hangpoint(TEARDOWN_HANGPOINT);
    await Promise.race([core.beginShutdown(), Bun.sleep(2000)]);
    await parts.server.stop();
    await parts.drainAttach?.(2000);
    await core.close();
    parts.release();
    await parts.telemetry?.shutdown();
  })();
  const watched = await watchTeardown(unwind, () => openReport(parts), parts.write);
  if (watched === "fired") return EXIT_TEARDOWN_WATCHDOG;
  logger.info(
    drained.survivors.length > 0
      ? `shutdown complete: exit ${EXIT_SURVIVORS}, the drain window expired with interrupted sessions ${drained.survivors.join(", ")}`
      : "shutdown complete",
  );
  return drained.survivors.length > 0 ? EXIT_SURVIVORS : EXIT_CLEAN;
}

/** What is still open: workers and their turn, sessions whose turn has not ended, tool-server children, open requests. */
function openReport(parts: SvcShutdownParts): string[] {
  const { core, server } = parts;
  const lines: string[] = [];
  for (const { worker, turns } of core.pool.openTurns())
    lines.push(`turn worker ${worker}: ${turns.length > 0 ? `running turn ${turns.join(", ")}` : "idle"}`);
  for (const { key } of core.host.turnsInFlight()) lines.push(`session ${key.app}/${key.id}: turn still in flight`);
  for (const row of core.tools.mcp?.rows() ?? [])
    if (row.pid !== undefined) lines.push(`tool server ${row.name}: child process ${row.pid} (${row.status})`);
  lines.push(
    `main listener :${server.port}: ${server.pendingRequests} open request(s), ${server.pendingWebSockets} websocket(s)`,
  );
  return lines;
}
