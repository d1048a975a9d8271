/**
 * The access re-check sweep's I/O side: every `--access-recheck` the declared permissions are
 * reviewed again (SelfSubjectAccessReview); a permission denied on two consecutive sweeps becomes a
 * `sentinel.access_revoked` signal through the dispatcher (critical for a required permission,
 * warning for an optional one) and, when required, stops the runner (its watches end and /readyz
 * turns 503). Optional permissions degrade loudly; the runner keeps going. Only grants held at
 * startup are swept: a permission the watcher never had is never reported revoked.
 */
import type { Logger } from "../telemetry/logger.ts";
import { type AccessAnswer, type AccessCheck, checkKey } from "./core/access-plan.ts";
import { AccessRecheck, type Revocation } from "./core/access-recheck.ts";
import type { Signal } from "./core/signal.ts";
import type { Dispatcher } from "./dispatcher.ts";
import { reviewAccess } from "./kube/access-review.ts";
import type { KubeConnection } from "./kube/kube-connection.ts";
import type { WatcherMetrics } from "./watcher-metrics.ts";

export const ACCESS_REVOKED_KIND = "sentinel.access_revoked";

export function revocationSignal(revocation: Revocation, now: number): Signal {
  const consequence = revocation.required
    ? "a required permission: the runner stops"
    : "an optional permission: the runner keeps going, degraded";
  return {
    kind: ACCESS_REVOKED_KIND,
    reason: "access_revoked",
    namespace: revocation.check.namespace ?? "",
    kindOfObject: "Permission",
    name: revocation.description,
    uid: `access:${checkKey(revocation.check)}`,
    message: `permission "${revocation.description}" was denied on two consecutive access re-checks${revocation.reason ? ` (${revocation.reason})` : ""}; ${consequence}`,
    eventCount: 1,
    firstSeen: now,
    lastSeen: now,
    type: "",
    severity: revocation.required ? "critical" : "warning",
  };
}

export interface AccessSweeperDeps {
  connection: KubeConnection;
  dispatcher: Dispatcher;
  logger: Logger;
  metrics: WatcherMetrics;
  /** Stops the runner's watches (a required permission was revoked). */
  stopRunner: () => Promise<void>;
}

export class AccessSweeper {
  private readonly recheck: AccessRecheck;
  private running = false;
  revoked = false;

  /** `heldAtStartup`: what the startup review allowed; only those grants are tracked (D142). */
  constructor(
    required: readonly AccessCheck[],
    optional: readonly AccessCheck[],
    heldAtStartup: (check: AccessCheck) => boolean,
    private readonly deps: AccessSweeperDeps,
  ) {
    this.recheck = new AccessRecheck(required, optional, heldAtStartup);
  }

  /** One sweep (skipped while the previous one still runs). */
  async sweep(): Promise<void> {
    if (this.running || this.revoked) return;
    this.running = true;
    try {
      const { connection, dispatcher, logger, metrics } = this.deps;
      const answers = new Map<string, AccessAnswer>();
      await Promise.all(
        this.recheck.checks().map(async (check) => answers.set(checkKey(check), await reviewAccess(connection, check))),
      );
      for (const answer of answers.values())
        metrics.accessRechecks({ outcome: "error" in answer ? "error" : answer.allowed ? "allowed" : "denied" });
      const verdict = this.recheck.sweep((check) => answers.get(checkKey(check)) ?? { error: "not reviewed" });
      for (const check of verdict.restored) logger.warn(`access re-check: permission restored: ${checkKey(check)}`);
      for (const revocation of verdict.revoked) {
        const line = `access re-check: permission "${revocation.description}" denied on two consecutive sweeps${revocation.reason ? ` (${revocation.reason})` : ""}`;
        if (revocation.required) logger.error(`${line}: required, stopping the runner`);
        else logger.warn(`${line}: optional, degraded (the runner keeps going)`);
        await dispatcher.dispatch(revocationSignal(revocation, Date.now()));
      }
      if (verdict.stop) {
        this.revoked = true;
        await this.deps.stopRunner();
      }
    } finally {
      this.running = false;
    }
  }
}
