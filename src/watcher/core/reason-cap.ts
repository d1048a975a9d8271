/**
 * The `reason` label cap of the watcher's series (D433): the first 100 distinct reasons a watcher
 * sees keep their own label value; every later new reason is folded into `other`, so a cluster
 * that invents reasons cannot grow the scrape without bound. One cap per cluster's metrics, shared
 * by every series with a `reason` label. Pure.
 */

export const REASON_LABEL_CAP = 100;
/** The one value every reason beyond the cap is counted under. */
export const REASON_OVERFLOW = "other";

export class ReasonCap {
  readonly #kept = new Set<string>();

  constructor(readonly cap: number = REASON_LABEL_CAP) {}

  /** The label value to count `reason` under. */
  label(reason: string): string {
    if (this.#kept.has(reason)) return reason;
    if (this.#kept.size >= this.cap) return REASON_OVERFLOW;
    this.#kept.add(reason);
    return reason;
  }

  /** How many distinct reasons keep their own value. */
  get size(): number {
    return this.#kept.size;
  }
}
