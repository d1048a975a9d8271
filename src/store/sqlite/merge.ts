/**
 * The merge of the sqlite store's log-structured write path: re-encodes the event rows of the
 * oldest `log` rows, from memory (JournalMemory keeps their JSON), into per-session
 * `event_blocks` rows of at most `blockRows` consecutive events, and deletes those log rows, in
 * ONE transaction, so a crash leaves every event row in exactly one of the two tables (D150).
 * Runs in slices of at most `sliceRows` event rows (the oldest log rows first), each its own
 * short transaction.
 * Triggers: a commit that leaves the journal at `thresholdRows` or more queues one slice as a
 * microtask, behind the continuations of the appends it just settled and before the next group
 * commit, so merges keep pace even when appends keep the microtask queue busy; a writer idle for
 * `idleMs` merges everything, one slice per macrotask (setImmediate) so I/O runs in between;
 * close (and mergeJournal) merges everything at once.
 *
 * Never runs concurrently with a group commit: both are synchronous calls on the one connection
 * of the main thread, and a slice only ever starts from its own microtask, timer or setImmediate
 * callback (or close), never from inside a commit. While writes are held (`mayWrite` false, see
 * checkpointer.ts) no triggered slice starts; `resume` picks up where the hold stopped. A refused
 * merge (SQLITE_FULL, a busy moment, ...) rolls back, leaves the journal and its memory as they
 * were, is counted in `stats.mergeFailures`, and is retried after a backoff. Settles no promises
 * and logs nothing.
 */
import type { Database } from "bun:sqlite";
import type { JournalMemory } from "./journal.ts";
import type { Statements } from "./statements.ts";

export interface MergeOptions {
  /** Start merging once the journal holds this many rows. */
  thresholdRows: number;
  /** Merge after the writer has been idle this long (ms); false: only on threshold and close. */
  idleMs: number | false;
  /** Most rows one merge transaction moves (bounds the pause it causes). */
  sliceRows: number;
  /** Most events per `event_blocks` row (<= MAX_BLOCK_ROWS). */
  blockRows: number;
  /** Asked before each triggered slice; false parks merging until `resume`. Default: always true. */
  mayWrite?: () => boolean;
  /** After each committed slice (inside the merge: only note it, act later). */
  onMerged?: () => void;
}

export interface MergeStats {
  /** Merge transactions committed. */
  merges: number;
  /** Event rows moved from the log into `event_blocks`. */
  mergedRows: number;
  /** Merge transactions rolled back (the store refused, or a statement failed); retried later. */
  mergeFailures: number;
  /** Longest time one merge transaction held the event loop (ms), WAL auto-checkpoints (if any) included. */
  longestMergeMs: number;
  /** Time spent in merge transactions since open (ms). */
  totalMergeMs: number;
}

/** First retry after a refused merge; doubles per consecutive failure up to MAX_RETRY_MS. */
const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 30_000;

type Timer = ReturnType<typeof setTimeout>;

export class JournalMerger {
  readonly stats: MergeStats = { merges: 0, mergedRows: 0, mergeFailures: 0, longestMergeMs: 0, totalMergeMs: 0 };
  private readonly txn: (hi: number) => number;
  private pressureQueued = false;
  /** The running idle merge moves every journal id <= runTarget; 0 when none is running. */
  private runTarget = 0;
  private runQueued = false;
  private timer: Timer | undefined;
  private timerAt = 0;
  private lastWrite = 0;
  private failuresInRow = 0;
  /** No merge starts before this time (performance.now()) after a refused one. */
  private retryAt = 0;
  private stopped = false;
  /** A triggered slice found writes held: `resume` reschedules. */
  private parked = false;
  private readonly mayWrite: () => boolean;
  private readonly pressure = (): void => {
    this.pressureQueued = false;
    if (this.stopped || this.journal.size < this.options.thresholdRows || performance.now() < this.retryAt) return;
    if (!this.writable()) return;
    this.mergeSlice(this.journal.lastId);
    this.schedule();
  };
  private readonly runStep = (): void => {
    this.runQueued = false;
    this.continueRun();
  };
  private readonly wake = (): void => {
    this.timer = undefined;
    this.onTimer();
  };

  constructor(
    private readonly db: Database,
    st: Statements,
    private readonly journal: JournalMemory,
    private readonly options: MergeOptions,
  ) {
    this.mayWrite = options.mayWrite ?? (() => true);
    // Prepared BEGIN/COMMIT as in write-ops.ts; mergeSlice rolls back a failed one.
    this.txn = (hi: number) => {
      st.begin.run();
      let moved = 0;
      for (const [pk, first, last, body] of journal.blocksThrough(hi, options.blockRows)) {
        st.insertBlock.run(pk, first, last, body);
        moved += last - first + 1;
      }
      const expected = journal.countThrough(hi);
      const deleted = st.trimLog.run(hi).changes;
      // Equal to the memory's count by construction; if not, roll back rather than let the file
      // and the memory disagree.
      if (deleted !== expected) {
        throw new Error(`merge through log id ${hi}: memory holds ${expected} log rows, deleted ${deleted}`);
      }
      st.commit.run();
      return moved;
    };
  }

  /** After every committed group commit (outside any transaction): schedules a merge if due. */
  noteCommit(): void {
    this.lastWrite = performance.now();
    this.schedule();
  }

  /**
   * Merges the whole journal now, synchronously, in back-to-back slices (close, tests).
   * False when a slice was refused: the rest stays in the journal.
   */
  mergeAll(): boolean {
    const target = this.journal.lastId;
    while (this.hasRowsThrough(target)) {
      if (!this.mergeSlice(target)) {
        this.schedule();
        return false;
      }
    }
    return true;
  }

  /** Writes may run again after a hold: continues the merging it parked. */
  resume(): void {
    if (!this.parked) return;
    this.parked = false;
    if (this.runTarget !== 0) {
      if (!this.runQueued) {
        this.runQueued = true;
        setImmediate(this.runStep);
      }
      return;
    }
    this.schedule();
  }

  /** No merges start after this (close). */
  stop(): void {
    this.stopped = true;
    this.runTarget = 0;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * Over the threshold: one slice of the oldest rows as a microtask, so it runs between group
   * commits even when appends keep the microtask queue busy (its continuation re-checks).
   * Under it: a timer for the idle merge, or for the retry of a refused one.
   */
  private schedule(): void {
    if (this.stopped || this.journal.logRows === 0) return;
    if (this.journal.size >= this.options.thresholdRows && performance.now() >= this.retryAt) {
      if (!this.pressureQueued) {
        this.pressureQueued = true;
        queueMicrotask(this.pressure);
      }
      return;
    }
    if (this.runTarget !== 0) return;
    this.armTimer(this.dueAt());
  }

  /** When the next timer-driven merge may start: the retry time after a refusal, else idleness. */
  private dueAt(): number {
    if (this.failuresInRow > 0) return this.retryAt;
    return this.options.idleMs === false ? Number.POSITIVE_INFINITY : this.lastWrite + this.options.idleMs;
  }

  private onTimer(): void {
    if (this.stopped || this.runTarget !== 0 || this.journal.logRows === 0) return;
    const due = this.dueAt();
    if (performance.now() < due) {
      this.armTimer(due);
      return;
    }
    // Merge everything there is now, one slice per macrotask so I/O runs in between.
    this.runTarget = this.journal.lastId;
    this.continueRun();
  }

  private continueRun(): void {
    if (this.stopped || this.runTarget === 0) return;
    if (this.hasRowsThrough(this.runTarget) && !this.writable()) return;
    if (this.hasRowsThrough(this.runTarget) && this.mergeSlice(this.runTarget) && this.hasRowsThrough(this.runTarget)) {
      if (!this.runQueued) {
        this.runQueued = true;
        setImmediate(this.runStep);
      }
      return;
    }
    // Done, or refused (retried at retryAt). Rows that arrived meanwhile wait for the next trigger.
    this.runTarget = 0;
    this.schedule();
  }

  private writable(): boolean {
    if (this.mayWrite()) return true;
    this.parked = true;
    return false;
  }

  private armTimer(at: number): void {
    if (this.stopped || !Number.isFinite(at)) return;
    if (this.timer !== undefined) {
      // An earlier wake-up re-checks and re-arms itself; a later one is moved forward.
      if (this.timerAt <= at) return;
      clearTimeout(this.timer);
    }
    this.timerAt = at;
    this.timer = setTimeout(this.wake, Math.max(0, at - performance.now()));
    this.timer.unref();
  }

  private hasRowsThrough(target: number): boolean {
    const hi = this.journal.sliceEnd(1);
    return hi !== undefined && hi <= target;
  }

  /** One slice: the oldest rows with id <= target, at most sliceRows. True when committed. */
  private mergeSlice(target: number): boolean {
    const end = this.journal.sliceEnd(this.options.sliceRows);
    if (end === undefined) return true;
    const hi = Math.min(end, target);
    const started = performance.now();
    try {
      const moved = this.txn(hi);
      this.journal.dropThrough(hi);
      this.stats.merges++;
      this.stats.mergedRows += moved;
      this.failuresInRow = 0;
      this.retryAt = 0;
      this.options.onMerged?.();
      return true;
    } catch {
      if (this.db.inTransaction) {
        try {
          this.db.exec("ROLLBACK");
        } catch {
          // Already rolled back by SQLite; the next BEGIN reports a dead connection.
        }
      }
      this.stats.mergeFailures++;
      this.failuresInRow++;
      this.retryAt = performance.now() + Math.min(FIRST_RETRY_MS * 2 ** (this.failuresInRow - 1), MAX_RETRY_MS);
      return false;
    } finally {
      const ms = performance.now() - started;
      this.stats.totalMergeMs += ms;
      if (ms > this.stats.longestMergeMs) this.stats.longestMergeMs = ms;
    }
  }
}
