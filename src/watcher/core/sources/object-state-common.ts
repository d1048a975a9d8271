/**
 * What the object-state detectors share (D376): their settings with the defaults issue 31 asks for,
 * the signal they build, and the small readers of Kubernetes objects they use. Pure.
 */
import type { Signal } from "../signal.ts";
import { type SignalInput, sourceSignal } from "./source-fields.ts";
import type { KubeObject } from "../source-spec.ts";

const MINUTE = 60_000;

export interface ObjectStateSettings {
  /** Ready changes within `flapWindowMs` that make a node flapping. */
  flapChanges: number;
  flapWindowMs: number;
  /** Fraction of progressDeadlineSeconds without progress (with unready replicas) before progress_deadline. */
  progressFraction: number;
  /** Summed restarts a pod gains within `restartWindowMs` for restart_burst. */
  restartBurst: number;
  restartWindowMs: number;
  /** Pressure sustained this long escalates node_pressure to critical (once). */
  pressureEscalateMs: number;
  /** Evictions on one node within `evictionWindowMs` for eviction_burst. */
  evictionBurst: number;
  evictionWindowMs: number;
  /** Per-object state untouched this long is forgotten. */
  stateTtlMs: number;
}

export const OBJECT_STATE_DEFAULTS: ObjectStateSettings = {
  flapChanges: 3,
  flapWindowMs: 10 * MINUTE,
  progressFraction: 0.8,
  restartBurst: 3,
  restartWindowMs: 10 * MINUTE,
  pressureEscalateMs: 5 * MINUTE,
  evictionBurst: 3,
  evictionWindowMs: 10 * MINUTE,
  stateTtlMs: 24 * 60 * MINUTE,
};

export interface Meta {
  uid: string;
  name: string;
  namespace: string;
  labels: Record<string, string>;
  ownerReferences: Array<{ kind?: string; name?: string; uid?: string; controller?: boolean }>;
}

export function meta(object: KubeObject): Meta {
  const raw = (object.metadata ?? {}) as Partial<Meta>;
  return {
    uid: String(raw.uid ?? ""),
    name: String(raw.name ?? ""),
    namespace: String(raw.namespace ?? ""),
    labels: raw.labels ?? {},
    ownerReferences: raw.ownerReferences ?? [],
  };
}

export interface Condition {
  type?: string;
  status?: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  lastUpdateTime?: string;
}

export function conditions(object: KubeObject): Condition[] {
  return ((object.status ?? {}) as { conditions?: Condition[] }).conditions ?? [];
}

export function condition(object: KubeObject, type: string): Condition | undefined {
  return conditions(object).find((one) => one.type === type);
}

/** An `objectstate.<reason>` signal at `now` (synthetic: type "", one occurrence). */
export function objectStateSignal(input: Omit<SignalInput, "kind">): Signal {
  return sourceSignal({ ...input, kind: `objectstate.${input.reason}` });
}

/** Times within `windowMs` of `now` (older ones dropped). */
export function within(times: readonly number[], now: number, windowMs: number): number[] {
  return times.filter((time) => now - time < windowMs);
}
