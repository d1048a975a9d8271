/**
 * Open conditions and their clearance reports (docs/watcher-pipeline.md#recovery, D437): a
 * detector says which of the conditions it paged on still hold (`Detector.open`); the host diffs
 * that set after every observe, poll and tick and reports each condition that appeared (`opened`)
 * and each that went away (`cleared`, with when). The diff lives beside the detector (in its
 * worker), so a fresh detector, after a worker restart, only ever reports as cleared what it saw
 * open itself: a restart never clears anything (D438). Pure.
 */

/** A condition a detector paged on and that still holds: the signal's uid and reason. */
export interface OpenCondition {
  uid: string;
  reason: string;
}

/** One change of a source's open set, as it crosses to the main thread. */
export interface ClearanceReport {
  event: "opened" | "cleared";
  uid: string;
  reason: string;
  /** When the host saw the change (epoch ms): a cleared condition's stable-since. */
  at: number;
  /** Cleared because its object was deleted (the host saw the delete since the last diff). */
  resolution?: "object_deleted";
}

const keyOf = (condition: OpenCondition) => `${condition.uid}\u0000${condition.reason}`;

export class OpenConditionDiff {
  #open = new Map<string, OpenCondition>();

  /** The reports that take the last open set to `current`; `deleted`: uids deleted since the last diff. */
  diff(current: Iterable<OpenCondition>, now: number, deleted?: ReadonlySet<string>): ClearanceReport[] {
    const next = new Map<string, OpenCondition>();
    for (const condition of current) next.set(keyOf(condition), condition);
    const reports: ClearanceReport[] = [];
    for (const [key, condition] of next)
      if (!this.#open.has(key))
        reports.push({ event: "opened", uid: condition.uid, reason: condition.reason, at: now });
    for (const [key, condition] of this.#open)
      if (!next.has(key))
        reports.push({
          event: "cleared",
          uid: condition.uid,
          reason: condition.reason,
          at: now,
          ...(deleted?.has(condition.uid) ? { resolution: "object_deleted" as const } : {}),
        });
    this.#open = next;
    return reports;
  }

  get size(): number {
    return this.#open.size;
  }
}
