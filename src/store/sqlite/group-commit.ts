/**
 * Group-commit scheduling: collects write ops requested in the same tick and hands them to one
 * commit function as a batch, on a microtask or setImmediate (no sooner than `minIntervalMs`
 * after the previous one), or at once when the batch grows past a row budget. A batch stops at the op that reaches the row budget, so ops that queued while
 * writes were held (`mayWrite` false, see checkpointer.ts) are committed in several batches, one
 * per setImmediate, after `resume`. The commit function may decline a batch (returns false: the
 * database was busy for a moment, nothing was written or settled): the batch goes back to the
 * front and is retried on a later macrotask, never by waiting on the event loop, until
 * MAX_DEFER_MS have passed, after which it may no longer decline. Owns only the queue and its
 * timing; never touches the database and never settles an op (the commit function does).
 */

export type FlushOn = "microtask" | "immediate";

export interface QueuedOp {
  /** Rows the op writes (at least 1); counts toward the early-flush budget. */
  weight: number;
}

/** After this long declining batches, the commit function must settle them (refuse, if need be). */
const MAX_DEFER_MS = 1000;
/** Longest wait between two retries of a declined batch. */
const MAX_RETRY_DELAY_MS = 50;

/**
 * Commits `batch` and settles every op in it, returning true; or, only when `mayDecline` and the
 * database was busy, writes and settles nothing and returns false (the batch is retried later).
 */
export type CommitFn<Op> = (batch: Op[], mayDecline: boolean) => boolean;

export interface GroupCommitOptions {
  flushOn: FlushOn;
  maxBatchRows: number;
  /**
   * The least time between the starts of two scheduled commits, ms (default 0): a flush asked
   * sooner waits out the rest on a timer, so a steady stream of single writes (results arriving
   * one by one) makes one transaction per interval instead of one each. A batch that reaches
   * `maxBatchRows` still commits at once.
   */
  minIntervalMs?: number;
  /** Asked before each commit; false parks the queue until `resume`. Default: always true. */
  mayWrite?: () => boolean;
}

export class GroupCommit<Op extends QueuedOp> {
  private queue: Op[] = [];
  private rows = 0;
  private scheduled = false;
  private parked = false;
  /** A declined batch waits for its retry timer; flushes wait with it (order is kept). */
  private retryPending = false;
  private declines = 0;
  private decliningSince = 0;
  private readonly mayWrite: () => boolean;
  /** performance.now() when the last scheduled commit started. */
  private lastTickAt = Number.NEGATIVE_INFINITY;
  private readonly tick = (): void => {
    this.scheduled = false;
    this.lastTickAt = performance.now();
    this.flush();
  };
  private readonly retry = (): void => {
    this.retryPending = false;
    this.flush();
  };

  constructor(
    private readonly commit: CommitFn<Op>,
    private readonly options: GroupCommitOptions,
  ) {
    this.mayWrite = options.mayWrite ?? (() => true);
  }

  get pending(): number {
    return this.queue.length;
  }

  push(op: Op): void {
    this.queue.push(op);
    this.rows += op.weight;
    if (this.parked) return;
    if (this.rows >= this.options.maxBatchRows) {
      this.flush();
      return;
    }
    this.schedule(this.options.flushOn);
  }

  /** Commits one batch now, synchronously, unless writes are held (then parks until `resume`). */
  flush(): void {
    if (this.queue.length === 0 || this.retryPending) return;
    if (!this.mayWrite()) {
      this.parked = true;
      return;
    }
    const batch = this.take();
    const mayDecline = this.declines === 0 || performance.now() - this.decliningSince < MAX_DEFER_MS;
    if (!this.commit(batch, mayDecline)) {
      this.putBack(batch);
      return;
    }
    this.declines = 0;
    if (this.queue.length > 0) this.schedule("immediate");
  }

  /** Writes may run again: commits what queued meanwhile. */
  resume(): void {
    if (!this.parked) return;
    this.parked = false;
    if (this.queue.length > 0) this.schedule("immediate");
  }

  /** Commits everything queued now, synchronously, held or not; nothing may be declined (close). */
  flushAll(): void {
    this.parked = false;
    this.retryPending = false;
    while (this.queue.length > 0) this.commit(this.take(), false);
  }

  /** A declined batch: back to the front, retried after a short, growing delay. */
  private putBack(batch: Op[]): void {
    let rows = 0;
    for (const op of batch) rows += op.weight;
    this.queue = batch.concat(this.queue);
    this.rows += rows;
    if (this.declines === 0) this.decliningSince = performance.now();
    this.declines++;
    this.retryPending = true;
    setTimeout(this.retry, this.declines === 1 ? 0 : Math.min(2 ** (this.declines - 2), MAX_RETRY_DELAY_MS));
  }

  /** The oldest ops until the batch reaches the row budget (everything, unless writes were held). */
  private take(): Op[] {
    let n = 0;
    let rows = 0;
    while (n < this.queue.length && rows < this.options.maxBatchRows) {
      rows += (this.queue[n] as Op).weight;
      n++;
    }
    if (n === this.queue.length) {
      const batch = this.queue;
      this.queue = [];
      this.rows = 0;
      return batch;
    }
    this.rows -= rows;
    return this.queue.splice(0, n);
  }

  private schedule(on: FlushOn): void {
    if (this.scheduled) return;
    this.scheduled = true;
    const wait = (this.options.minIntervalMs ?? 0) - (performance.now() - this.lastTickAt);
    if (wait > 0) setTimeout(this.tick, wait);
    else if (on === "immediate") setImmediate(this.tick);
    else queueMicrotask(this.tick);
  }
}
