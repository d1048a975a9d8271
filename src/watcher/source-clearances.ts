/**
 * Source clearance (docs/watcher-pipeline.md#recovery, D437): the main thread's record of what
 * each source said about the conditions it paged on, `opened` or `cleared` (reported across its
 * worker's channel), keyed like the dedup cache (`<uid>|<canonical reason>`). The recovery sweep
 * asks it first, sources in a fixed order (rollout, saturation, degradation, expiry,
 * capacity, gateway, token-burn, workload, autoscaling; the first that knows the key judges),
 * then the cluster graph's pod and node clearance. A report stands until the same source reports
 * the key again, even across a worker restart: the new worker only clears what it saw open
 * itself (D438). A cleared record is forgotten after CLEARED_TTL_MS, an open one OPEN_TTL_MS
 * after it opened (then it judges nothing and the incident stays symptomatic until a `cleared`
 * comes: a condition a replaced worker never saw again cannot be held forever, D439).
 */
import type { DedupIncident } from "./core/dedup-cache.ts";
import type { ClearanceReport } from "./core/open-conditions.ts";
import { canonicalReason } from "./core/reasons.ts";
import type { ClearanceObservation } from "./core/recovery.ts";

/** The order clearance observers are asked in (docs/watcher-pipeline.md#recovery); pod and node clearance come after. */
export const CLEARANCE_ORDER: readonly string[] = [
  "rollout",
  "saturation",
  "degradation",
  "expiry",
  "capacity",
  "gateway",
  "token-burn",
  "workload",
  "autoscaling",
];

/** How long a cleared record answers (the pod tombstones' two hours). */
export const CLEARED_TTL_MS = 2 * 60 * 60_000;
/** How long an open record answers after it opened. */
export const OPEN_TTL_MS = 24 * 60 * 60_000;
/** How often expired records are swept (on a report). */
const PRUNE_EVERY_MS = 60_000;

interface Judgement {
  cleared: boolean;
  at: number;
  resolution?: "object_deleted";
}

export type Lookup = (uid: string, incident: DedupIncident, reason: string) => ClearanceObservation | undefined;

export class SourceClearances {
  readonly #bySource = new Map<string, Map<string, Judgement>>();
  readonly #now: () => number;
  #prunedAt = 0;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** One report of source `source` (its worker's `clearance` notification). */
  report(source: string, report: ClearanceReport): void {
    let records = this.#bySource.get(source);
    if (!records) {
      records = new Map();
      this.#bySource.set(source, records);
    }
    // The dispatcher's family is message-aware only for `BackOff` and `Failed`, reasons no source signals.
    records.set(`${report.uid}|${canonicalReason(report.reason)}`, {
      cleared: report.event === "cleared",
      at: report.at,
      ...(report.resolution ? { resolution: report.resolution } : {}),
    });
    this.#prune();
  }

  /** Records held (the bounded-state check of the tests). */
  get size(): number {
    let size = 0;
    for (const records of this.#bySource.values()) size += records.size;
    return size;
  }

  /** The first source, in CLEARANCE_ORDER (then any other), that knows the key judges it. */
  lookup = (uid: string, _incident: DedupIncident, reason: string): ClearanceObservation | undefined => {
    const key = `${uid}|${reason}`;
    const now = this.#now();
    for (const source of this.#order()) {
      const judgement = this.#bySource.get(source)?.get(key);
      if (!judgement || expired(judgement, now)) continue;
      if (!judgement.cleared) return { cleared: false };
      return {
        cleared: true,
        stableSince: judgement.at,
        ...(judgement.resolution ? { resolution: judgement.resolution } : {}),
      };
    }
    return undefined;
  };

  /** Source clearance first, then `fallback` (the graph's pod and node clearance), D437. */
  chain(fallback: Lookup | undefined): Lookup {
    if (!fallback) return this.lookup;
    return (uid, incident, reason) => this.lookup(uid, incident, reason) ?? fallback(uid, incident, reason);
  }

  #order(): string[] {
    const others = [...this.#bySource.keys()].filter((source) => !CLEARANCE_ORDER.includes(source));
    return [...CLEARANCE_ORDER, ...others];
  }

  #prune(): void {
    const now = this.#now();
    if (now - this.#prunedAt < PRUNE_EVERY_MS) return;
    this.#prunedAt = now;
    for (const records of this.#bySource.values())
      for (const [key, judgement] of records) if (expired(judgement, now)) records.delete(key);
  }
}

function expired(judgement: Judgement, now: number): boolean {
  return now - judgement.at > (judgement.cleared ? CLEARED_TTL_MS : OPEN_TTL_MS);
}
