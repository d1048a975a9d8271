/**
 * Provider scale decisions (D397): what a cloud's own autoscaler logs say about a scale-up it could
 * not make: a zone out of the machine type (`capacity.stockout`), a quota in the way
 * (`capacity.quota_blocked`), a subnet out of addresses (`capacity.ip_exhausted`), all critical.
 * They come from a cloud's logging API, so this portable build has no provider: the interface is
 * here, with the no-op default the capacity source uses, and `providerSignal` says how a decision
 * would become a signal, for the provider a cloud-specific build adds. Pure.
 */
import type { Signal } from "../signal.ts";

export type ProviderDecisionKind = "stockout" | "quota_blocked" | "ip_exhausted";

/** One scale decision a provider reported. */
export interface ProviderScaleDecision {
  kind: ProviderDecisionKind;
  /** The node group (or instance group) the decision was about. */
  nodeGroup: string;
  /** The zone or region, when the provider names it. */
  location?: string;
  /** The provider's own words (its error code and message). */
  message: string;
  /** Epoch ms of the decision. */
  at: number;
}

/** A source of provider decisions; its I/O lives outside the core, behind this type. */
export interface CapacityProvider {
  readonly name: string;
  /** Decisions since `since` (epoch ms), oldest first. */
  decisions(since: number): Promise<readonly ProviderScaleDecision[]>;
}

/** The portable build's provider: none, so no decision is ever reported. */
export const NO_CAPACITY_PROVIDER: CapacityProvider = {
  name: "none",
  decisions: async () => [],
};

/** A provider decision as the capacity signal it stands for (critical; uid `nodegroup:<group>`). */
export function providerSignal(decision: ProviderScaleDecision): Signal {
  const where = decision.location ? ` in ${decision.location}` : "";
  return {
    kind: `capacity.${decision.kind}`,
    reason: decision.kind,
    namespace: "",
    kindOfObject: "NodeGroup",
    name: decision.nodeGroup,
    uid: `nodegroup:${decision.nodeGroup}`,
    message: `node group ${decision.nodeGroup}${where}: ${decision.message}`,
    eventCount: 1,
    firstSeen: decision.at,
    lastSeen: decision.at,
    type: "",
    severity: "critical",
  };
}
