/**
 * Distillation (`--distill-interval`, D424): folds occurrence rows into durable facts, one per
 * (cluster, kind, reason, namespace, workload): how often it happened, how many incidents it
 * opened and how they were routed, when it was first and last seen, how many resolved and how
 * long that took on average, and how often it came back after resolving. Incremental: each run
 * folds the rows written since the last one into the facts so far; the incidents still open
 * are carried between runs. Bounded: at most `maxFacts` facts (least recently seen dropped) and
 * `maxOpen` open incidents (oldest dropped). Pure; the tables are src/watcher/store-memory.ts.
 */
import type { OccurrenceRow, Route } from "./occurrence.ts";

export interface Fact {
  cluster: string;
  kind: string;
  reason: string;
  namespace: string;
  /** `Kind/name`, "" when unknown. */
  workload: string;
  /** The highest severity seen. */
  severity: string;
  occurrences: number;
  /** Incidents opened (a new uid and reason, whatever its route). */
  incidents: number;
  resolved: number;
  /** Sum of open-to-resolved times (ms); the mean is this over `resolved`. */
  resolveMsTotal: number;
  /** Incidents opened after an earlier one of this fact resolved. */
  recurrences: number;
  firstSeen: number;
  lastSeen: number;
  lastResolved?: number;
  lastSession?: string;
  /** Rows by route. */
  routes: Partial<Record<Route, number>>;
}

/** An incident opened and not resolved yet: when, and the fact it counts under. */
export interface OpenIncident {
  at: number;
  fact: string;
}

export interface DistillState {
  facts: Map<string, Fact>;
  /** `uid|reason` → the open incident. */
  open: Map<string, OpenIncident>;
}

export interface DistillLimits {
  maxFacts: number;
  maxOpen: number;
}

export const DISTILL_LIMITS: DistillLimits = { maxFacts: 10_000, maxOpen: 10_000 };

/**
 * The limits inside a store of `maxBytes`: facts (about 500 bytes each with their index) may take
 * a quarter of it and the open incidents (about 200 bytes each) an eighth, never more than
 * `DISTILL_LIMITS` and never fewer than 100 each, so the memory cannot crowd out the rows it is
 * distilled from.
 */
export function distillLimitsFor(maxBytes: number): DistillLimits {
  const fit = (share: number, each: number, most: number) =>
    Math.max(100, Math.min(most, Math.floor((maxBytes * share) / each)));
  return { maxFacts: fit(1 / 4, 500, DISTILL_LIMITS.maxFacts), maxOpen: fit(1 / 8, 200, DISTILL_LIMITS.maxOpen) };
}

/** Routes that start an incident when its uid and reason are not open already. */
const OPENING: ReadonlySet<Route> = new Set<Route>(["injected", "storm", "storm-member", "watchboard", "info-stored"]);

export function factKey(fact: Pick<Fact, "cluster" | "kind" | "reason" | "namespace" | "workload">): string {
  return JSON.stringify([fact.cluster, fact.kind, fact.reason, fact.namespace, fact.workload]);
}

/** The mean open-to-resolved time, undefined before the first resolution. */
export function meanResolveMs(fact: Fact): number | undefined {
  return fact.resolved > 0 ? Math.round(fact.resolveMsTotal / fact.resolved) : undefined;
}

/** What an SRE reads first: recurring, still open, resolved, or noise that never opened anything. */
export function factClass(fact: Fact): "recurring" | "open" | "resolved" | "noise" {
  if (fact.recurrences > 0) return "recurring";
  if (fact.incidents > fact.resolved) return "open";
  return fact.incidents > 0 ? "resolved" : "noise";
}

const RANK: Record<string, number> = { info: 0, warning: 1, critical: 2 };

function higher(a: string, b: string): string {
  return (RANK[b] ?? -1) > (RANK[a] ?? -1) ? b : a;
}

function freshFact(row: OccurrenceRow): Fact {
  return {
    cluster: row.cluster,
    kind: row.kind,
    reason: row.reason,
    namespace: row.namespace,
    workload: row.workload ?? "",
    severity: row.severity,
    occurrences: 0,
    incidents: 0,
    resolved: 0,
    resolveMsTotal: 0,
    recurrences: 0,
    firstSeen: row.at,
    lastSeen: row.at,
    routes: {},
  };
}

/** A resolution: the open incident of this uid and reason, else the oldest open one of the uid. */
function takeOpen(state: DistillState, row: OccurrenceRow): OpenIncident | undefined {
  const exact = `${row.uid}|${row.reason}`;
  let key = state.open.has(exact) ? exact : undefined;
  if (!key)
    for (const candidate of state.open.keys())
      if (candidate.startsWith(`${row.uid}|`)) {
        key = candidate;
        break;
      }
  if (!key) return undefined;
  const open = state.open.get(key);
  state.open.delete(key);
  return open;
}

function resolve(state: DistillState, row: OccurrenceRow): string[] {
  const open = takeOpen(state, row);
  const fact = open ? state.facts.get(open.fact) : undefined;
  if (!open || !fact) return [];
  fact.resolved++;
  fact.resolveMsTotal += Math.max(0, row.at - open.at);
  fact.lastResolved = row.at;
  return [open.fact];
}

function observe(state: DistillState, row: OccurrenceRow): string {
  const key = factKey({ ...row, workload: row.workload ?? "" });
  let fact = state.facts.get(key);
  if (!fact) {
    fact = freshFact(row);
    state.facts.set(key, fact);
  }
  fact.occurrences++;
  fact.routes[row.route] = (fact.routes[row.route] ?? 0) + 1;
  fact.severity = higher(fact.severity, row.severity);
  fact.firstSeen = Math.min(fact.firstSeen, row.at);
  fact.lastSeen = Math.max(fact.lastSeen, row.at);
  if (row.sessionId) fact.lastSession = row.sessionId;
  const incident = `${row.uid}|${row.reason}`;
  if (OPENING.has(row.route) && !state.open.has(incident)) {
    fact.incidents++;
    if (fact.lastResolved !== undefined) fact.recurrences++;
    state.open.set(incident, { at: row.at, fact: key });
  }
  return key;
}

/** Drops the oldest entries of a map kept in insertion order until it fits. */
function trimOldest<V>(map: Map<string, V>, max: number): void {
  for (const key of map.keys()) {
    if (map.size <= max) return;
    map.delete(key);
  }
}

/**
 * Folds `rows` (in write order) into `state`; returns the keys of the facts it touched. Outcome
 * rows (`resolved`) close an incident; `followup` rows (a reverted recovery, an escalation) count
 * as occurrences of their own kind.
 */
export function distill(state: DistillState, rows: readonly OccurrenceRow[], limits = DISTILL_LIMITS): Set<string> {
  const touched = new Set<string>();
  for (const row of rows) {
    const keys = row.route === "resolved" ? resolve(state, row) : [observe(state, row)];
    for (const key of keys) touched.add(key);
  }
  trimOldest(state.open, limits.maxOpen);
  if (state.facts.size > limits.maxFacts) {
    const byAge = [...state.facts.entries()].sort((a, b) => a[1].lastSeen - b[1].lastSeen);
    for (const [key] of byAge.slice(0, state.facts.size - limits.maxFacts)) {
      state.facts.delete(key);
      touched.delete(key);
    }
  }
  return touched;
}
