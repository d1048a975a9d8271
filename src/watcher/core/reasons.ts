/**
 * Reasons: the shipped default allow-list and the canonical reason (the dedup family) of a raw
 * event reason, plain and message-aware (docs/watcher-pipeline.md#canonical-reasons). New mapping
 * rows may be added, never changed. Pure.
 */

/** The shipped default `--reason` allow-list, matched case-sensitively against Event.reason. */
export const DEFAULT_REASONS: readonly string[] = [
  "CrashLoopBackOff",
  "ImagePullBackOff",
  "ErrImagePull",
  "OOMKilled",
  "FailedMount",
  "FailedScheduling",
  "BackOff",
  "Unhealthy",
  "NetworkNotReady",
  "NodeNotReady",
  "Evicted",
];

const FIXED: Record<string, string> = {
  ErrImagePull: "ImagePullBackOff",
  BackOff: "CrashLoopBackOff",
  node_notready: "NodeNotReady",
  restart_burst: "CrashLoopBackOff",
  pending: "FailedScheduling",
  "pending-aged": "FailedScheduling",
  quota_blocked: "QuotaExhausted",
  quota_forecast: "QuotaExhausted",
};

/** The canonical family of a reason when no message is at hand. */
export function canonicalReason(reason: string): string {
  return FIXED[reason] ?? reason;
}

/** The canonical family, using the event message where it disambiguates (`BackOff`, `Failed`). */
export function canonicalReasonForEvent(reason: string, message: string): string {
  if (reason === "BackOff") return /pulling image/i.test(message) ? "ImagePullBackOff" : "CrashLoopBackOff";
  if (reason === "Failed") {
    return /Failed to pull image|ErrImagePull|ImagePullBackOff/.test(message) ? "ImagePullBackOff" : "Failed";
  }
  return canonicalReason(reason);
}
