/**
 * The dispatcher's lanes (docs/watcher-pipeline.md#lanes, D450): every signal is handled in the
 * lane of its incident (its dedup key), so the signals of one incident are handled one at a time
 * in arrival order while other incidents go on beside it. At most `concurrency` lanes work at
 * once; a lane that finished one item goes to the back of the line, so a busy incident cannot
 * starve the others. A slow sink or a slow enrichment holds its own lane only.
 *
 * Bounded: a lane holds at most `perLane` waiting items and all lanes together `total`; an item
 * over either bound is refused (the caller counts and logs it: nothing is dropped silently). An
 * item that waited longer than `delayedAfterMs` for its turn is counted as delayed.
 */

export interface LaneSettings {
  /** Lanes working at once. */
  concurrency: number;
  /** Items one lane may hold waiting (the one at work not counted). */
  perLane: number;
  /** Items all lanes may hold waiting together. */
  total: number;
  /** An item that waits longer than this for its turn counts as delayed. */
  delayedAfterMs: number;
}

export const DEFAULT_LANE_SETTINGS: LaneSettings = {
  concurrency: 16,
  perLane: 1000,
  total: 50_000,
  delayedAfterMs: 1000,
};

export interface LaneObserver {
  /** An item waited longer than `delayedAfterMs` before it started. */
  delayed(): void;
}

/** An item the lanes refused: which bound it hit. */
export class LaneFull extends Error {
  constructor(readonly bound: "lane" | "total") {
    super(bound === "lane" ? "the incident's lane is full" : "the dispatch queue is full");
  }
}

interface Item {
  work: () => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  queuedAt: number;
}

export class DispatchLanes {
  private readonly lanes = new Map<string, Item[]>();
  /** Lanes with waiting items and nothing at work, oldest first. */
  private readonly ready: string[] = [];
  private readonly working = new Set<string>();
  private waiting = 0;
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly settings: LaneSettings = DEFAULT_LANE_SETTINGS,
    private readonly observer: LaneObserver = { delayed: () => {} },
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Items waiting for their turn (not the ones at work). */
  get queued(): number {
    return this.waiting;
  }

  /** Lanes at work now. */
  get active(): number {
    return this.working.size;
  }

  /** Whether the lane has an item at work or waiting. */
  busy(lane: string): boolean {
    return this.working.has(lane) || (this.lanes.get(lane)?.length ?? 0) > 0;
  }

  /**
   * Runs `work` in `lane` after the lane's earlier items; rejects with LaneFull, without running
   * it, when a bound is hit (unless `bounded` is false: work that must not be lost, such as
   * binding a session the sink already created).
   */
  run<T>(lane: string, work: () => Promise<T>, bounded = true): Promise<T> {
    const items = this.lanes.get(lane) ?? [];
    if (bounded && items.length >= this.settings.perLane) return Promise.reject(new LaneFull("lane"));
    if (bounded && this.waiting >= this.settings.total) return Promise.reject(new LaneFull("total"));
    return new Promise<T>((resolve, reject) => {
      items.push({ work, resolve: resolve as (value: unknown) => void, reject, queuedAt: this.now() });
      this.waiting++;
      if (items.length === 1) {
        this.lanes.set(lane, items);
        if (!this.working.has(lane)) this.ready.push(lane);
      }
      this.pump();
    });
  }

  /** Resolves once no lane has anything at work or waiting. */
  idle(): Promise<void> {
    if (this.working.size === 0 && this.waiting === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private pump(): void {
    while (this.working.size < this.settings.concurrency) {
      const lane = this.ready.shift();
      if (lane === undefined) return;
      this.start(lane);
    }
  }

  private start(lane: string): void {
    const items = this.lanes.get(lane);
    const item = items?.shift();
    if (!items || !item) return;
    if (items.length === 0) this.lanes.delete(lane);
    this.waiting--;
    this.working.add(lane);
    if (this.now() - item.queuedAt > this.settings.delayedAfterMs) this.observer.delayed();
    let settled: Promise<unknown>;
    try {
      settled = item.work();
    } catch (error) {
      settled = Promise.reject(error);
    }
    settled.then(item.resolve, item.reject).finally(() => this.finish(lane));
  }

  private finish(lane: string): void {
    this.working.delete(lane);
    // Back of the line: a busy lane takes its next turn after the lanes already waiting.
    if (this.lanes.has(lane)) this.ready.push(lane);
    this.pump();
    if (this.working.size === 0 && this.waiting === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const wake of waiters) wake();
    }
  }
}
