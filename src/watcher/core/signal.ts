/**
 * The watcher's internal signal: one observation from a source, before filter and dedup.
 * Sources fill identity and text; the dispatcher stamps cluster and fingerprint. Pure types.
 */

export type Severity = "critical" | "warning" | "info";

export const SEVERITIES: readonly Severity[] = ["critical", "warning", "info"];

const SEVERITY_RANK: Record<Severity, number> = { info: 0, warning: 1, critical: 2 };

/** Whether `severity` is above `than` (an unknown `than` is outranked by nothing). */
export function outranks(severity: Severity, than: Severity | undefined): boolean {
  return than !== undefined && SEVERITY_RANK[severity] > SEVERITY_RANK[than];
}

/** The kind of a Kubernetes event signal (docs/wire-compat.md#the-watchers-payload-v1 says what it was before). */
export const CLUSTER_EVENT_KIND = "cluster-event";

export interface Signal {
  /** `cluster-event`, `storm`, a source-namespaced kind such as `rollout.stall`. */
  kind: string;
  /** The reason as the cluster wrote it (`ErrImagePull`, `BackOff`); never canonicalized. */
  reason: string;
  /** "" for cluster-scoped objects. */
  namespace: string;
  kindOfObject: string;
  name: string;
  /** The event's involvedObject.fieldPath, e.g. `spec.containers{server}`. */
  container?: string;
  uid: string;
  message: string;
  /** The source's own occurrence count (Event.count); gates the debounces. */
  eventCount: number;
  /** Epoch ms. */
  firstSeen: number;
  /** Epoch ms; the dedup clock of the signal. */
  lastSeen: number;
  /** Event.type (`Warning`, `Normal`); "" for synthetic signals. */
  type: string;
  severity: Severity;
  /** event.source.host, else reportingInstance. */
  node?: string;
  /** `Kind/name` of the controlling owner, when known. */
  controllerRef?: string;
  /** The Event object's own labels. */
  labels?: Record<string, string>;
  /** A forecasting source's ETA (epoch ms) and how it was fitted (`linear-90m-window`), D417. */
  forecast?: { eta: number; confidenceBasis: string };
}
