/**
 * Group-commit scheduling: collects write ops requested in the same tick and hands them to one
 * commit function as a batch, on a microtask or setImmediate, or at once when the batch grows
 * past a row budget. Owns only the queue and its timing; never touches the database and never
 * settles an op (the commit function does).
 */

export type FlushOn = "microtask" | "immediate";

export interface QueuedOp {
  /** Rows the op writes (at least 1); counts toward the early-flush budget. */
  weight: number;
}

export interface GroupCommitOptions {
  flushOn: FlushOn;
  maxBatchRows: number;
}

export class GroupCommit<Op extends QueuedOp> {
  private queue: Op[] = [];
  private rows = 0;
  private scheduled = false;
  private readonly tick = (): void => {
    this.scheduled = false;
    this.flush();
  };

  constructor(
    private readonly commit: (batch: Op[]) => void,
    private readonly options: GroupCommitOptions,
  ) {}

  get pending(): number {
    return this.queue.length;
  }

  push(op: Op): void {
    this.queue.push(op);
    this.rows += op.weight;
    if (this.rows >= this.options.maxBatchRows) {
      this.flush();
      return;
    }
    if (this.scheduled) return;
    this.scheduled = true;
    if (this.options.flushOn === "immediate") setImmediate(this.tick);
    else queueMicrotask(this.tick);
  }

  /** Commits everything queued now, synchronously. */
  flush(): void {
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    this.rows = 0;
    this.commit(batch);
  }
}
