/**
 * How spar's own leeway sources read their settings from the flag values alone (D406): the
 * `--topology-*` flags into TopologySettings and the `--compute-class-*` flags into
 * ComputeClassSettings. Key lists accept `zone`, `region` and `hostname` for the well-known
 * labels; an absent list flag is its default, an empty one is an empty list (for
 * `--topology-domain-unavailable-keys`: the finding is off).
 */
import type { FlagValue } from "../../config/flag-spec.ts";
import { COMPUTE_CLASS_DEFAULTS, type ComputeClassSettings } from "../core/sources/compute-class-rules.ts";
import { TOPOLOGY_DEFAULTS, type TopologySettings } from "../core/sources/topology-drift.ts";
import { expandKey, parseClusterDefaults } from "../core/sources/topology-intent.ts";

type Values = ReadonlyMap<string, FlagValue>;

function num(values: Values, name: string, fallback: number): number {
  const value = values.get(name);
  return typeof value === "number" ? value : fallback;
}

function bool(values: Values, name: string, fallback: boolean): boolean {
  const value = values.get(name);
  return typeof value === "boolean" ? value : fallback;
}

/** A comma-separated flag: absent → the fallback; given (even empty) → its items. */
function items(values: Values, name: string, fallback: readonly string[]): string[] {
  const value = values.get(name);
  if (typeof value !== "string") return [...fallback];
  return value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

export function topologySettings(values: Values): TopologySettings {
  const base = TOPOLOGY_DEFAULTS;
  const namespaces = items(values, "topology-per-domain-namespaces", []);
  const clusterDefaults = values.get("topology-cluster-defaults");
  return {
    keys: items(values, "topology-keys", base.keys).map(expandKey),
    unavailableKeys: items(values, "topology-domain-unavailable-keys", base.unavailableKeys).map(expandKey),
    dwellMs: num(values, "topology-dwell", base.dwellMs),
    domainMemoryMs: base.domainMemoryMs,
    nodeGroupKeys: items(values, "topology-node-group-keys", base.nodeGroupKeys),
    maxNodeGroups: num(values, "topology-max-node-groups", base.maxNodeGroups),
    defaults: parseClusterDefaults(typeof clusterDefaults === "string" ? clusterDefaults : undefined),
    tierCSignals: bool(values, "topology-tier-c-signals", base.tierCSignals),
    learnBaselines: bool(values, "topology-learn-baselines", base.learnBaselines),
    baselineBand: num(values, "topology-baseline-band", base.baselineBand),
    baselineHalfLifeMs: num(values, "topology-baseline-half-life", base.baselineHalfLifeMs),
    capacityRatio: num(values, "topology-capacity-ratio", base.capacityRatio),
    perDomain: {
      collapseStates: bool(values, "topology-per-domain-collapse-states", base.perDomain.collapseStates),
      excludeNamespaces: items(values, "topology-per-domain-exclude-namespaces", []),
      namespaces: namespaces.includes("all") ? [] : namespaces,
      maxKeys: num(values, "topology-per-domain-max-keys", base.perDomain.maxKeys),
      minDrift: num(values, "topology-per-domain-min-drift", base.perDomain.minDrift),
      every: bool(values, "topology-per-domain-series", base.perDomain.every),
    },
  };
}

export function computeClassSettings(values: Values): ComputeClassSettings {
  const base = COMPUTE_CLASS_DEFAULTS;
  return {
    dwellMs: num(values, "compute-class-dwell", base.dwellMs),
    infer: bool(values, "compute-class-infer", base.infer),
    lastRankCeiling: num(values, "compute-class-last-rank-ceiling", base.lastRankCeiling),
    rank0Floor: num(values, "compute-class-rank0-floor", base.rank0Floor),
    tierCSignals: bool(values, "compute-class-tier-c-signals", base.tierCSignals),
    windowMs: num(values, "compute-class-window", base.windowMs),
  };
}
