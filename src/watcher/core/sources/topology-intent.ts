/**
 * The topology-drift source's judgement of one workload on one axis (D408): what spread its pod
 * template declares (tier A: a DoNotSchedule spread constraint or required anti-affinity; tier B:
 * ScheduleAnyway or preferred anti-affinity; tier C: nothing declared), with the cluster's default
 * constraints standing in for a template that declares none, as the scheduler does; the skew of
 * its pods over the axis's eligible domains; the drift score (how far the spread is from even);
 * and the exponentially decayed baseline that judges tier C. Pure.
 */
import { field, text } from "./source-fields.ts";

export type Tier = "A" | "B" | "C";

export interface DefaultConstraint {
  key: string;
  maxSkew: number;
  tier: "A" | "B";
}

/** The upstream scheduler's system defaults (a template without constraints): zone 5 and hostname 3, ScheduleAnyway. */
export const UPSTREAM_DEFAULTS: readonly DefaultConstraint[] = [
  { key: "topology.kubernetes.io/zone", maxSkew: 5, tier: "B" },
  { key: "kubernetes.io/hostname", maxSkew: 3, tier: "B" },
];

const SHORT_KEYS: Readonly<Record<string, string>> = {
  zone: "topology.kubernetes.io/zone",
  region: "topology.kubernetes.io/region",
  hostname: "kubernetes.io/hostname",
};

/** `zone`, `region` and `hostname` stand for the well-known labels; anything else is a label key. */
export function expandKey(key: string): string {
  return SHORT_KEYS[key] ?? key;
}

/** `--topology-cluster-defaults`: `none`, or `key=maxSkew[:DoNotSchedule|ScheduleAnyway]` entries (ScheduleAnyway when omitted). */
export function parseClusterDefaults(value: string | undefined): readonly DefaultConstraint[] {
  if (value === undefined || value.trim() === "") return UPSTREAM_DEFAULTS;
  if (value.trim() === "none") return [];
  return value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "")
    .map((item) => {
      const [key = "", rest = ""] = item.split("=");
      const [skew = "1", mode = "ScheduleAnyway"] = rest.split(":");
      return { key: expandKey(key), maxSkew: Number(skew), tier: mode === "DoNotSchedule" ? "A" : "B" };
    });
}

export interface AxisIntent {
  key: string;
  tier: Tier;
  /** Tolerated skew for tiers A and B; 1 for tier C (even spread) when no baseline judges it. */
  maxSkew: number;
  minDomains: number;
  /** Where the intent came from, for the message. */
  origin: "spread constraint" | "anti-affinity" | "cluster default" | "undeclared";
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function antiAffinity(podSpec: unknown, key: string): Tier | undefined {
  const anti = field(podSpec, "affinity", "podAntiAffinity");
  const required = list(field(anti, "requiredDuringSchedulingIgnoredDuringExecution"));
  if (required.some((term) => text(field(term, "topologyKey")) === key)) return "A";
  const preferred = list(field(anti, "preferredDuringSchedulingIgnoredDuringExecution"));
  if (preferred.some((term) => text(field(term, "podAffinityTerm", "topologyKey")) === key)) return "B";
  return undefined;
}

/** The intent of a pod template (or pod) spec on `key`, strictest first (D408). */
export function axisIntent(podSpec: unknown, key: string, defaults: readonly DefaultConstraint[]): AxisIntent {
  const constraints = list(field(podSpec, "topologySpreadConstraints"));
  const mine = constraints.filter((constraint) => text(field(constraint, "topologyKey")) === key);
  if (mine.length > 0) {
    const hard = mine.filter((constraint) => text(field(constraint, "whenUnsatisfiable")) !== "ScheduleAnyway");
    const chosen = hard.length > 0 ? hard : mine;
    const skews = chosen.map((constraint) => Number(field(constraint, "maxSkew")) || 1);
    const minDomains = Math.max(1, ...chosen.map((constraint) => Number(field(constraint, "minDomains")) || 1));
    return {
      key,
      tier: hard.length > 0 ? "A" : "B",
      maxSkew: Math.min(...skews),
      minDomains,
      origin: "spread constraint",
    };
  }
  const anti = antiAffinity(podSpec, key);
  if (anti) return { key, tier: anti, maxSkew: 1, minDomains: 1, origin: "anti-affinity" };
  // The scheduler applies its defaults only to a template that declares no constraint at all.
  const fallback = constraints.length === 0 ? defaults.find((one) => one.key === key) : undefined;
  if (fallback)
    return { key, tier: fallback.tier, maxSkew: fallback.maxSkew, minDomains: 1, origin: "cluster default" };
  return { key, tier: "C", maxSkew: 1, minDomains: 1, origin: "undeclared" };
}

export interface Spread {
  /** Pods per eligible domain (domains with a usable node the workload may run on). */
  counts: Map<string, number>;
  total: number;
  skew: number;
  /** The share of its pods that would have to move for the most even spread whole pods allow, in [0, 1). */
  score: number;
}

/** The skew as the scheduler computes it: max minus min over eligible domains (min 0 below minDomains). */
export function spread(counts: Map<string, number>, minDomains: number): Spread {
  const values = [...counts.values()];
  const total = values.reduce((sum, value) => sum + value, 0);
  if (values.length === 0 || total === 0) return { counts, total, skew: 0, score: 0 };
  const min = values.length < minDomains ? 0 : Math.min(...values);
  // The most even spread whole pods allow (5 over 3 domains: 2, 2, 1), matched largest to largest.
  const base = Math.floor(total / values.length);
  const extra = total % values.length;
  const sorted = [...values].sort((a, b) => b - a);
  const moved = sorted.reduce((sum, value, index) => sum + Math.abs(value - base - (index < extra ? 1 : 0)), 0);
  return { counts, total, skew: Math.max(...values) - min, score: moved / (2 * total) };
}

/** Something to judge: at least two pods over at least two eligible domains. */
export function scored(result: Spread): boolean {
  return result.total >= 2 && result.counts.size >= 2;
}

/** One workload (or node group) on one axis at the last sweep. */
export interface Judged {
  intent: AxisIntent;
  spread: Spread;
  drifting: boolean;
  /** The skew the intent tolerates (declared, or the learned ceiling). */
  ceiling: number;
}

export interface Baseline {
  mean: number;
  variance: number;
  /** When the first sample was taken (the baseline judges after one half-life of history). */
  since: number;
  at: number;
}

/** Folds a skew sample into an exponentially decayed mean and variance with this half-life. */
export function learn(baseline: Baseline | undefined, skew: number, now: number, halfLifeMs: number): Baseline {
  if (!baseline) return { mean: skew, variance: 0, since: now, at: now };
  const alpha = 1 - 2 ** (-Math.max(0, now - baseline.at) / halfLifeMs);
  const delta = skew - baseline.mean;
  return {
    mean: baseline.mean + alpha * delta,
    variance: (1 - alpha) * (baseline.variance + alpha * delta * delta),
    since: baseline.since,
    at: now,
  };
}

/** The highest skew a learned baseline tolerates: mean plus band standard deviations (σ at least 0.5). */
export function baselineCeiling(baseline: Baseline, band: number): number {
  return baseline.mean + band * Math.max(0.5, Math.sqrt(baseline.variance));
}
