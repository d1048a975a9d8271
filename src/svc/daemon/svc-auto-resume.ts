/**
 * Boot auto-resume wired into `spar svc` (src/svc/ops/auto-resume.ts): on when `--auto-resume`
 * (default) and the store is durable; runs once the listeners are up and the crash recovery has
 * started, drives continuation turns through the same path as an inject (SessionTurns, the
 * runtime core's turn loop), takes the store's interruption claim under this run's boot id, and
 * counts each outcome in `svc_autoresume_total{workload,outcome}`.
 */
import type { Logger } from "../../telemetry/logger.ts";
import { autoResume } from "../ops/auto-resume.ts";
import { OpsJournal } from "../ops/ops-journal.ts";
import { SessionRepair } from "../ops/session-repair.ts";
import type { SessionKey } from "../../core/session-key.ts";
import { SVC_INTERNAL } from "../dispatch/svc-core.ts";
import type { SvcRuntime } from "../dispatch/svc-runtime.ts";
import type { Workload } from "../workload/workload.ts";
import type { RuntimeCore } from "../../daemon/runtime-core.ts";
import type { SvcConfig } from "../../cli/svc-config.ts";

/** Whether this daemon serves the incident (holds its lease or can take it); always, on a database of its own. */
export async function servesIncident(core: RuntimeCore, key: SessionKey): Promise<boolean> {
  if (core.relay === undefined) return true;
  return (await core.host.tryActor(key).catch(() => undefined)) !== undefined;
}

export async function autoResumeAtBoot(
  config: SvcConfig,
  core: RuntimeCore,
  runtime: SvcRuntime,
  workload: Workload,
  logger: Logger,
): Promise<void> {
  const settings = config.autoResume;
  if (!settings.enabled) {
    logger.info(`auto-resume off: ${settings.offReason ?? "not asked for"}`);
    return;
  }
  const coordinatorApp = runtime.roster.coordinator.app;
  const executorSession = (key: SessionKey) => runtime.queries.executorSession(key);
  const count = core.metrics.counter(
    "svc_autoresume_total",
    "Boot auto-resume outcomes of interrupted sessions, by workload and outcome.",
  );
  await autoResume({
    ops: new OpsJournal({ coordinatorApp, executorSession, log: core.store }),
    repair: new SessionRepair({
      coordinatorApp,
      specialistApp: (name) => runtime.roster.specialist(name)?.app,
      executorSession,
    }),
    coordinatorDispatch: runtime.shape === "coordinator",
    windowMs: settings.windowMs,
    sessions: async () =>
      (await core.sessions.list(SVC_INTERNAL))
        .map((listed) => listed.record)
        .filter((record) => record.app === coordinatorApp),
    state: async (sessionId) => (await runtime.queries.status(sessionId)).state,
    head: (key) => core.store.head(key),
    // Another daemon sharing the database serves the incident: it is that daemon's to resume (D493).
    claim: async (key, claim) => (await servesIncident(core, key)) && core.store.claimInterruption(key, claim),
    bootId: core.autoContinue.bootId,
    runTurn: async (sessionId, message) => {
      await runtime.turns.run({ app: coordinatorApp, sid: sessionId }, SVC_INTERNAL, message);
    },
    draining: () => core.sessions.draining,
    count: (outcome) => count({ workload: workload.name, outcome }),
    log: (message) => logger.info(message),
    now: () => new Date(),
  }).catch((error: unknown) => logger.error(`auto-resume: ${String(error)}`));
}
