/**
 * The compute-class source's four judgements of one class at a sweep (D412), each sent once and
 * forgotten when its condition ends:
 * - `leeway.rank_wedged` (critical): pods of the class Unschedulable for `--compute-class-dwell`
 *   while, for the whole dwell, no pod of the class was placed and no usable node joined it: no
 *   rank can take them.
 * - `leeway.rank_degraded` (warning): over a full `--compute-class-window`, the mean share of the
 *   class's placed pods on rank 0 is below `--compute-class-rank0-floor` (when above 0), or the
 *   share on its last rank is above `--compute-class-last-rank-ceiling` (when above 0; a class of
 *   two ranks or more).
 * - `leeway.rank_no_migration` (warning): rank 0 gained usable nodes while pods ran on fallback
 *   ranks, and some of those pods were still there a dwell later.
 * - `leeway.rank_tier_unused` (warning; sent only with `--compute-class-tier-c-signals`, always
 *   on the `watcher_leeway_rank_unused` gauge): a declared priority had no node for a window.
 * Pure.
 */
import { goDuration } from "../go-time.ts";
import type { Severity, Signal } from "../signal.ts";
import { sourceSignal } from "./source-fields.ts";
import type { PriorityRule } from "./compute-class-model.ts";

export interface ComputeClassSettings {
  dwellMs: number;
  infer: boolean;
  /** 0 turns the rule off. */
  lastRankCeiling: number;
  /** 0 turns the rule off. */
  rank0Floor: number;
  tierCSignals: boolean;
  windowMs: number;
}

export const COMPUTE_CLASS_DEFAULTS: ComputeClassSettings = {
  dwellMs: 10 * 60_000,
  infer: true,
  lastRankCeiling: 0.9,
  rank0Floor: 0,
  tierCSignals: false,
  windowMs: 3600_000,
};

/** What the detector knows of one class at a sweep. */
export interface ClassView {
  name: string;
  /** Declared priorities (its ComputeClass), when read. */
  declared?: readonly PriorityRule[];
  /** Usable nodes per rank; all nodes per rank. */
  usable: Map<number, number>;
  nodes: Map<number, number>;
  /** Placed pods per known rank, and the uids on ranks above 0. */
  placed: Map<number, number>;
  fallbackPods: Set<string>;
  /** Pending-since of each Unschedulable pod. */
  unschedulable: number[];
}

export interface ClassState {
  firstSeen: number;
  lastProgress: number;
  wedged: boolean;
  samples: Array<{ at: number; share0: number; shareLast: number }>;
  degraded: boolean;
  rank0Usable?: number;
  migration?: { since: number; pods: Set<string>; fired: boolean } | undefined;
  rankSeen: Map<number, number>;
  unused: Set<number>;
}

export function newClassState(now: number): ClassState {
  return {
    firstSeen: now,
    lastProgress: now,
    wedged: false,
    samples: [],
    degraded: false,
    rankSeen: new Map(),
    unused: new Set(),
  };
}

/** The class's last rank: its declared priorities' last, else the highest rank seen. */
export function lastRank(view: ClassView): number {
  if (view.declared && view.declared.length > 0) return view.declared.length - 1;
  return Math.max(0, ...view.nodes.keys(), ...view.placed.keys());
}

function signal(view: ClassView, kind: string, severity: Severity, now: number, message: string): Signal {
  return sourceSignal({
    kind: `leeway.${kind}`,
    reason: kind,
    object: { namespace: "", name: view.name, uid: `computeclass:${view.name}` },
    kindOfObject: "ComputeClass",
    severity,
    now,
    message,
  });
}

function ranks(view: ClassView): string {
  const last = lastRank(view);
  return Array.from(
    { length: last + 1 },
    (_, rank) => `${rank}: ${view.usable.get(rank) ?? 0}/${view.nodes.get(rank) ?? 0}`,
  ).join(", ");
}

export function judgeWedged(view: ClassView, state: ClassState, settings: ComputeClassSettings, now: number): Signal[] {
  const waited = view.unschedulable.filter((since) => now - since >= settings.dwellMs);
  const stuck = waited.length > 0 && now - state.lastProgress >= settings.dwellMs;
  if (!stuck) {
    state.wedged = false;
    return [];
  }
  if (state.wedged) return [];
  state.wedged = true;
  return [
    signal(
      view,
      "rank_wedged",
      "critical",
      now,
      `compute class ${view.name}: ${waited.length} pod(s) Unschedulable for at least ${goDuration(settings.dwellMs)} and no rank placed a pod or added a usable node for ${goDuration(now - state.lastProgress)} (usable/all nodes by rank ${ranks(view)})`,
    ),
  ];
}

export function judgeDegraded(
  view: ClassView,
  state: ClassState,
  settings: ComputeClassSettings,
  now: number,
): Signal[] {
  const last = lastRank(view);
  const total = [...view.placed.values()].reduce((sum, count) => sum + count, 0);
  if (total > 0)
    state.samples.push({
      at: now,
      share0: (view.placed.get(0) ?? 0) / total,
      shareLast: (view.placed.get(last) ?? 0) / total,
    });
  const start = now - settings.windowMs;
  while ((state.samples[0]?.at ?? now) < start) state.samples.shift();
  const full = now - state.firstSeen >= settings.windowMs && state.samples.length > 0;
  const mean = (pick: (sample: { share0: number; shareLast: number }) => number) =>
    state.samples.reduce((sum, sample) => sum + pick(sample), 0) / Math.max(1, state.samples.length);
  const share0 = mean((sample) => sample.share0);
  const shareLast = mean((sample) => sample.shareLast);
  const floor = settings.rank0Floor > 0 && share0 < settings.rank0Floor;
  const ceiling = settings.lastRankCeiling > 0 && last >= 1 && shareLast > settings.lastRankCeiling;
  if (!full || (!floor && !ceiling)) {
    state.degraded = false;
    return [];
  }
  if (state.degraded) return [];
  state.degraded = true;
  const percent = (value: number) => `${Math.round(value * 100)}%`;
  const why = floor
    ? `${percent(share0)} of its placed pods ran on rank 0, below --compute-class-rank0-floor ${percent(settings.rank0Floor)}`
    : `${percent(shareLast)} of its placed pods ran on its last rank ${last}, above --compute-class-last-rank-ceiling ${percent(settings.lastRankCeiling)}`;
  return [
    signal(
      view,
      "rank_degraded",
      "warning",
      now,
      `compute class ${view.name}: over ${goDuration(settings.windowMs)} ${why}`,
    ),
  ];
}

export function judgeMigration(
  view: ClassView,
  state: ClassState,
  settings: ComputeClassSettings,
  now: number,
): Signal[] {
  const rank0 = view.usable.get(0) ?? 0;
  const grew = state.rank0Usable !== undefined && rank0 > state.rank0Usable;
  state.rank0Usable = rank0;
  if (rank0 === 0) state.migration = undefined;
  else if (grew && !state.migration && view.fallbackPods.size > 0)
    state.migration = { since: now, pods: new Set(view.fallbackPods), fired: false };
  const migration = state.migration;
  if (!migration) return [];
  for (const uid of migration.pods) if (!view.fallbackPods.has(uid)) migration.pods.delete(uid);
  if (migration.pods.size === 0) {
    state.migration = undefined;
    return [];
  }
  if (migration.fired || now - migration.since < settings.dwellMs) return [];
  migration.fired = true;
  return [
    signal(
      view,
      "rank_no_migration",
      "warning",
      now,
      `compute class ${view.name}: ${migration.pods.size} pod(s) stayed on fallback ranks for ${goDuration(now - migration.since)} after rank 0 gained capacity (${rank0} usable rank-0 node(s))`,
    ),
  ];
}

/** Declared ranks with no node for a window; the gauge shows them, the wire only with tier-C signals. */
export function judgeUnused(view: ClassView, state: ClassState, settings: ComputeClassSettings, now: number): Signal[] {
  const signals: Signal[] = [];
  for (let rank = 0; rank < (view.declared?.length ?? 0); rank++) {
    if ((view.nodes.get(rank) ?? 0) > 0) {
      state.rankSeen.set(rank, now);
      state.unused.delete(rank);
      continue;
    }
    const seen = state.rankSeen.get(rank) ?? state.firstSeen;
    if (state.unused.has(rank) || now - seen < settings.windowMs) continue;
    state.unused.add(rank);
    if (settings.tierCSignals)
      signals.push(
        signal(
          view,
          "rank_tier_unused",
          "warning",
          now,
          `compute class ${view.name}: declared priority ${rank} had no node for ${goDuration(now - seen)}`,
        ),
      );
  }
  return signals;
}
