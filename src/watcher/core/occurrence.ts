/**
 * One row of the occurrence store (`--store`): a routed signal, its route and the session it went
 * to. Pure; the store itself is src/watcher/occurrence-store.ts.
 */
import type { Signal } from "./signal.ts";

export type Route =
  | "injected"
  | "suppressed"
  | "storm"
  | "storm-member"
  | "resolved"
  | "followup"
  | "error"
  /** An info-severity signal: recorded, never paged (D393). */
  | "info-stored"
  /** A warning delivered through the watchboard's digest (D418). */
  | "watchboard"
  /** A recurrence that opened with `triage.regressed` (D421). */
  | "regressed";

export interface OccurrenceRow {
  at: number;
  route: Route;
  kind: string;
  severity: string;
  reason: string;
  namespace: string;
  kindOfObject: string;
  name: string;
  uid: string;
  cluster: string;
  sessionId?: string;
}

export function rowOf(signal: Signal, route: Route, cluster: string, at: number, sessionId?: string): OccurrenceRow {
  return {
    at,
    route,
    kind: signal.kind,
    severity: signal.severity,
    reason: signal.reason,
    namespace: signal.namespace,
    kindOfObject: signal.kindOfObject,
    name: signal.name,
    uid: signal.uid,
    cluster,
    ...(sessionId ? { sessionId } : {}),
  };
}
