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

/**
 * Auto-resume of interrupted incidents: every one at boot, and (several daemons sharing the
 * database, D493) an incident this daemon has just taken over from another, whose stop or death
 * left it interrupted: once boot's own pass is done, one at a time per incident.
 */
export class IncidentResumer {
  readonly #config: SvcConfig;
  readonly #core: RuntimeCore;
  readonly #runtime: SvcRuntime;
  readonly #workload: Workload;
  readonly #logger: Logger;
  readonly #count: (labels: { workload: string; outcome: string }) => void;
  readonly #inFlight = new Set<string>();
  #bootDone = false;

  constructor(config: SvcConfig, core: RuntimeCore, runtime: SvcRuntime, workload: Workload, logger: Logger) {
    this.#config = config;
    this.#core = core;
    this.#runtime = runtime;
    this.#workload = workload;
    this.#logger = logger;
    this.#count = core.metrics.counter(
      "svc_autoresume_total",
      "Boot auto-resume outcomes of interrupted sessions, by workload and outcome.",
    );
  }

  /** Boot: every interrupted incident this daemon serves or can take. */
  async atBoot(): Promise<void> {
    const settings = this.#config.autoResume;
    if (!settings.enabled) this.#logger.info(`auto-resume off: ${settings.offReason ?? "not asked for"}`);
    else await this.#run(undefined);
    this.#bootDone = true;
  }

  /** This daemon has just taken the incident over from another (D493): resume it if it was left interrupted. */
  taken(sessionId: string): void {
    if (!this.#config.autoResume.enabled || !this.#bootDone || this.#inFlight.has(sessionId)) return;
    this.#inFlight.add(sessionId);
    // After the lease's taker has loaded the incident: the resume's turn loads it again.
    setTimeout(() => void this.#run(sessionId).finally(() => this.#inFlight.delete(sessionId)), 0);
  }

  async #run(only: string | undefined): Promise<void> {
    const { core, runtime } = { core: this.#core, runtime: this.#runtime };
    const coordinatorApp = runtime.roster.coordinator.app;
    const executorSession = (key: SessionKey) => runtime.queries.executorSession(key);
    await autoResume({
      ops: new OpsJournal({ coordinatorApp, executorSession, log: core.store }),
      repair: new SessionRepair({
        coordinatorApp,
        specialistApp: (name) => runtime.roster.specialist(name)?.app,
        executorSession,
      }),
      coordinatorDispatch: runtime.shape === "coordinator",
      windowMs: this.#config.autoResume.windowMs,
      sessions: async () =>
        (await core.sessions.list(SVC_INTERNAL))
          .map((listed) => listed.record)
          .filter((record) => record.app === coordinatorApp && (only === undefined || record.id === only)),
      state: async (sessionId) => (await runtime.queries.status(sessionId)).state,
      head: (key) => core.store.head(key),
      // Another daemon sharing the database serves the incident: it is that daemon's to resume (D493).
      claim: async (key, claim) => (await servesIncident(core, key)) && core.store.claimInterruption(key, claim),
      bootId: core.autoContinue.bootId,
      runTurn: async (sessionId, message) => {
        await runtime.turns.run({ app: coordinatorApp, sid: sessionId }, SVC_INTERNAL, message);
      },
      draining: () => core.sessions.draining,
      count: (outcome) => this.#count({ workload: this.#workload.name, outcome }),
      log: (message) => this.#logger.info(message),
      now: () => new Date(),
    }).catch((error: unknown) => this.#logger.error(`auto-resume: ${String(error)}`));
  }
}
