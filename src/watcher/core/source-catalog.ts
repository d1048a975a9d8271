/**
 * The sources built on the contract (source-spec.ts, D375): each one's spec, in the order `auto`
 * considers them. Their grants join the access plan's table; the runner starts those the plan
 * enables, with settings read by sources/source-registry.ts. Pure: every spec and detector here
 * is pure (what needs I/O, such as parsing a certificate, comes in through the settings).
 */
import type { SourceSpec } from "./source-spec.ts";
import { AUTOSCALING_SPEC } from "./sources/autoscaling-detector.ts";
import { CAPACITY_SPEC } from "./sources/capacity-source.ts";
import { DEGRADATION_SPEC } from "./sources/degradation-detector.ts";
import { EXPIRY_SPEC } from "./sources/expiry-spec.ts";
import { GATEWAY_SPEC } from "./sources/gateway-source.ts";
import { INGRESS_SPEC } from "./sources/ingress-source.ts";
import { NOTIFICATIONS_SPEC } from "./sources/notification-detector.ts";
import { OBJECT_STATE_SPEC } from "./sources/object-state.ts";
import { QUOTA_SPEC } from "./sources/quota-detector.ts";
import { ROLLOUT_SPEC } from "./sources/rollout-detector.ts";
import { TOKEN_BURN_SPEC } from "./sources/token-burn-detector.ts";
import { SATURATION_SPEC } from "./sources/saturation-spec.ts";
import { WORKLOAD_SPEC } from "./sources/workload-detector.ts";
import { COMPUTE_CLASS_SPEC } from "./sources/compute-class-detector.ts";
import { TOPOLOGY_DRIFT_SPEC } from "./sources/topology-drift.ts";

// biome-ignore lint/suspicious/noExplicitAny: each spec has its own settings type; the registry pairs them.
export const SOURCE_SPECS: readonly SourceSpec<any>[] = [
  OBJECT_STATE_SPEC,
  ROLLOUT_SPEC,
  WORKLOAD_SPEC,
  AUTOSCALING_SPEC,
  SATURATION_SPEC,
  DEGRADATION_SPEC,
  EXPIRY_SPEC,
  CAPACITY_SPEC,
  INGRESS_SPEC,
  GATEWAY_SPEC,
  // spar's own (D21): both join `auto` like every portable source (D406).
  TOPOLOGY_DRIFT_SPEC,
  COMPUTE_CLASS_SPEC,
  // Explicit-only (never under auto): their runners are in source-registry.ts SOURCE_RUNNERS.
  QUOTA_SPEC,
  NOTIFICATIONS_SPEC,
  TOKEN_BURN_SPEC,
];

export function sourceSpec(name: string): SourceSpec<unknown> | undefined {
  return SOURCE_SPECS.find((spec) => spec.name === name);
}

/** A SourceSpec as it runs with these settings: its scoped grants and polls (D384) and its tick (D437) in place. */
export function specForSettings<S>(spec: SourceSpec<S>, settings: S): SourceSpec<S> {
  const scoped = spec.scoped?.(settings);
  const tickMs = spec.tickFor?.(settings);
  return {
    ...spec,
    ...(scoped ? { required: scoped.required, polls: scoped.polls } : {}),
    ...(tickMs === undefined ? {} : { tickMs }),
  };
}
