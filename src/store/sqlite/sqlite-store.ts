/**
 * SqliteStore: the embedded Store (session rows, tombstones, durable inbox, event log) on one
 * bun:sqlite connection, the only writer of a file this daemon alone holds (D18, lock-file.ts).
 * Every write goes through one group-commit queue and lands in one immediate transaction per tick;
 * reads run directly on prepared statements and see committed state only. WAL checkpoints run in a
 * worker on a second connection (checkpointer.ts), never inside a commit. Must not be opened twice
 * on one file, and must not be used from several threads.
 *
 * Event rows are log-structured (D150): a group commit appends them as ONE row of the `log` table
 * (however many sessions and events the batch spans) and to JournalMemory; merge.ts later
 * re-encodes them per session into `event_blocks` rows of up to `blockRows` consecutive events,
 * clustered by (session, first seq). `read` serves seq <= a session's merged head from
 * `event_blocks` (block-reader.ts: one JSON.parse per block) and the rest from memory. Rows read from memory share their event objects with the
 * rows `append` returned and with other readers: callers must treat events as immutable (after
 * append too).
 */
import { basename } from "node:path";
import { commitSpan } from "../../telemetry/commit-trace.ts";
import { checkAppend, errorMessage, readRange, storeClosed } from "../store-rules.ts";
import { type WriteFields, batchSize, pendingWrite } from "../store-write-op.ts";
import type { Database } from "bun:sqlite";
import type { AppendOptions } from "../../core/event-log.ts";
import type { CommittedRow, SessionEvent } from "../../core/events.ts";
import { SparError } from "../../core/errors.ts";
import type {
  DeletedSession,
  InboxItem,
  InterruptionClaim,
  SessionAbort,
  SessionRecord,
  Store,
} from "../../core/session-store.ts";
import type { SessionKey } from "../../core/session-key.ts";
import { BlockReader } from "./block-reader.ts";
import { Checkpointer, type CheckpointOptions, type CheckpointStats } from "./checkpointer.ts";
import { GroupCommit, type FlushOn } from "./group-commit.ts";
import { JournalMemory, type Tail } from "./journal.ts";
import type { StoreLock } from "./lock-file.ts";
import { JournalMerger, type MergeStats } from "./merge.ts";
import { MAX_BLOCK_ROWS } from "./migrations.ts";
import { openDatabase, WAL_AUTOCHECKPOINT_PAGES, type OpenOptions } from "./open-db.ts";
import { inboxItem, sessionKey, sessionRecord } from "./row-codec.ts";
import { SessionIndex } from "./session-index.ts";
import { readFailed } from "./sqlite-errors.ts";
import { Statements } from "./statements.ts";
import { BatchWriter, type WriteOp, type WriterStats } from "./write-ops.ts";

export interface SqliteStoreOptions {
  /** Default NORMAL: a process crash loses nothing committed; FULL also survives power loss. */
  synchronous?: "NORMAL" | "FULL";
  /** When a tick's writes are flushed. Default "microtask". */
  flushOn?: FlushOn;
  /** Flush early once a batch holds this many event rows (default 2048). */
  maxBatchRows?: number;
  /** The least time between two scheduled commits, ms (default 0; group-commit.ts). */
  minCommitIntervalMs?: number;
  /** PRAGMA max_page_count: caps the file size; writes past it are refused with `unavailable`. */
  maxPageCount?: number;
  /**
   * Merge the journal into `events` once it holds this many rows (default 8192). Also bounds the
   * rows kept in memory while the writer is busy.
   */
  mergeThresholdRows?: number;
  /** Merge after the writer has been idle this long, ms (default 250); false: threshold and close only. */
  mergeIdleMs?: number | false;
  /**
   * Most rows one merge transaction moves (default 6144): bounds each merge pause (7-22 ms on the
   * bench machine with 100 busy sessions; larger slices make larger blocks and merge more cheaply
   * per row, but pause longer).
   */
  mergeSliceRows?: number;
  /** Most events per `event_blocks` row written by a merge (default 64, at most MAX_BLOCK_ROWS). */
  blockRows?: number;
  /**
   * WAL checkpoints in a worker (default, tuned by these options), or false: SQLite's automatic
   * checkpoint inside whichever commit crosses WAL_AUTOCHECKPOINT_PAGES, on the main thread.
   */
  checkpoint?: CheckpointOptions | false;
}

export type SqliteStoreStats = WriterStats &
  MergeStats &
  CheckpointStats & {
    /** Rows in the journal (committed, not yet merged) right now. */
    journalRows: number;
  };

/** SQLite's default page size, which the store keeps. */
const PAGE_SIZE = 4096;

export class SqliteStore implements Store {
  private readonly index: SessionIndex;
  private readonly writer: BatchWriter;
  private readonly merger: JournalMerger;
  private readonly queue: GroupCommit<WriteOp>;
  private readonly checkpointer: Checkpointer;
  private closed = false;
  private closing: Promise<void> | undefined;
  private readonly blocks: BlockReader;
  /**
   * A session was deleted: once every log row through this id is merged (its events may sit in
   * any of them), the WAL is scrubbed. 0: nothing to scrub.
   */
  private scrubThrough = 0;
  private scrubQueued = false;

  private constructor(
    private readonly db: Database,
    private readonly lock: StoreLock,
    private readonly st: Statements,
    private readonly journal: JournalMemory,
    readonly path: string,
    checkpointer: Checkpointer,
    options: SqliteStoreOptions,
  ) {
    this.checkpointer = checkpointer;
    const mayWrite = () => checkpointer.mayWrite();
    this.index = new SessionIndex(st, journal);
    this.blocks = new BlockReader(st.readBlocks, path);
    this.writer = new BatchWriter(db, st, this.index, journal);
    this.merger = new JournalMerger(db, st, journal, {
      thresholdRows: options.mergeThresholdRows ?? 8192,
      idleMs: options.mergeIdleMs ?? 250,
      sliceRows: options.mergeSliceRows ?? 6144,
      blockRows: Math.max(1, Math.min(MAX_BLOCK_ROWS, Math.floor(options.blockRows ?? 64))),
      mayWrite,
      onMerged: () => this.queueScrub(),
    });
    this.queue = new GroupCommit(
      (batch, mayDecline) => {
        const span = commitSpan(
          "sqlite",
          basename(this.path),
          batch.map((op) => op.trace),
        );
        if (!this.writer.commitBatch(batch, mayDecline)) {
          span?.end({ rows: 0, bytes: 0, committed: false });
          return false;
        }
        span?.end({ ...batchSize(batch), committed: true });
        if (batch.some((op) => op.kind === "delete" && op.result === true)) {
          this.scrubThrough = Math.max(1, journal.lastId);
          this.queueScrub();
        }
        this.merger.noteCommit();
        return true;
      },
      {
        flushOn: options.flushOn ?? "microtask",
        maxBatchRows: options.maxBatchRows ?? 2048,
        minIntervalMs: options.minCommitIntervalMs ?? 0,
        mayWrite,
      },
    );
    // Rows a previous run left in the journal get merged once this one is idle.
    if (journal.logRows > 0) this.merger.noteCommit();
  }

  /**
   * Opens (creating if absent) and locks `path`, loads any rows left in the journal before
   * answering anything, and starts the checkpointer; throws SparError `unavailable` on failure.
   */
  static open(path: string, options: SqliteStoreOptions = {}): SqliteStore {
    const synchronous = options.synchronous ?? "NORMAL";
    let store: SqliteStore | undefined;
    const checkpointer = new Checkpointer(
      path,
      synchronous,
      options.checkpoint ?? {},
      {
        resume: () => store?.resumeWrites(),
        fallback: () => store?.checkpointInCommits(),
      },
      PAGE_SIZE,
    );
    const checkpointOff = options.checkpoint === false;
    const open: OpenOptions = {
      synchronous,
      walAutocheckpointPages: checkpointOff ? WAL_AUTOCHECKPOINT_PAGES : 0,
    };
    if (!checkpointOff) open.walSizeLimitBytes = checkpointer.walLimitBytes;
    if (options.maxPageCount !== undefined) open.maxPageCount = options.maxPageCount;
    const { db, lock } = openDatabase(path, open);
    let st: Statements | undefined;
    try {
      st = new Statements(db);
      store = new SqliteStore(db, lock, st, JournalMemory.load(st, path), path, checkpointer, options);
    } catch (error) {
      st?.finalizeAll();
      db.close(false);
      lock.release();
      if (error instanceof SparError) throw error;
      throw new SparError("unavailable", `cannot open session store ${path}: ${errorMessage(error)}`);
    }
    checkpointer.start();
    return store;
  }

  /** Counters of the writer, the merge and the checkpointer since open (a copy). */
  get stats(): SqliteStoreStats {
    return { ...this.writer.stats, ...this.merger.stats, ...this.checkpointer.stats, journalRows: this.journal.size };
  }

  /**
   * Merges the whole journal into `events` now (normally left to the threshold, idle and close
   * triggers). Resolves false when the store refused a merge (counted in stats.mergeFailures;
   * the rest stays in the journal and is retried later).
   */
  mergeJournal(): Promise<boolean> {
    return this.reading(() => this.merger.mergeAll());
  }

  // ---- event log --------------------------------------------------------------------------

  append(session: SessionKey, events: readonly SessionEvent[], options?: AppendOptions): Promise<CommittedRow[]> {
    const checked = checkAppend(events, options);
    if (!checked.ok) return Promise.reject(checked.error);
    if (checked.value === undefined) return Promise.resolve([]);
    return this.submit<CommittedRow[]>({
      kind: "append",
      key: session,
      events,
      ...checked.value,
      weight: events.length,
    });
  }

  read(session: SessionKey, afterSeq: number, limit: number, uptoSeq?: number): Promise<CommittedRow[]> {
    return this.reading(() => {
      const entry = this.index.lookup(session);
      if (entry === undefined) return [];
      const head = this.index.head(entry);
      const range = readRange(afterSeq, limit, uptoSeq, head);
      if (range === undefined) return [];
      const { lo, hi } = range;
      const tail = this.journal.tail(entry.pk);
      // Rows up to `merged` are in `events`, the rest in memory.
      const merged = tail === undefined ? head : (tail.rows[0] as CommittedRow).seq - 1;
      if (hi <= merged) return this.blocks.read(entry.pk, lo, hi);
      const fromMemory = (tail as Tail).rows.slice(Math.max(lo, merged) - merged, hi - merged);
      return lo < merged ? this.blocks.read(entry.pk, lo, merged).concat(fromMemory) : fromMemory;
    });
  }

  /** 0 for a session without events, and for an unknown session. */
  head(session: SessionKey): Promise<number> {
    return this.reading(() => {
      const entry = this.index.lookup(session);
      return entry === undefined ? 0 : this.index.head(entry);
    });
  }

  // ---- sessions ---------------------------------------------------------------------------

  createSession(record: SessionRecord): Promise<void> {
    return this.submit<void>({ kind: "create", record, weight: 1 });
  }

  getSession(key: SessionKey): Promise<SessionRecord | undefined> {
    return this.reading(() => {
      const row = this.st.sessionByKey.get(key.app, key.id);
      return row === null ? undefined : sessionRecord(row);
    });
  }

  listSessions(): Promise<SessionRecord[]> {
    return this.reading(() => this.st.listSessions.all().map(sessionRecord));
  }

  findSessionsById(id: string): Promise<SessionKey[]> {
    return this.reading(() => this.st.keysById.all(id).map(sessionKey));
  }

  deleteSession(key: SessionKey): Promise<boolean> {
    return this.submit<boolean>({ kind: "delete", key, weight: 1 });
  }

  deletedSessions(id: string): Promise<DeletedSession[]> {
    return this.reading(() => this.st.tombstonesById.all(id).map((row) => ({ app: row.app, owner: row.owner })));
  }

  touchSession(key: SessionKey, at: string): Promise<void> {
    return this.submit<void>({ kind: "touch", key, at, weight: 1 });
  }

  setTitle(key: SessionKey, title: string | undefined): Promise<void> {
    return this.submit<void>({ kind: "title", key, title: title ?? null, weight: 1 });
  }

  setAcl(key: SessionKey, viewers: readonly string[], contributors: readonly string[]): Promise<void> {
    return this.submit<void>({ kind: "acl", key, viewers, contributors, weight: 1 });
  }

  abortSession(key: SessionKey, abort: SessionAbort): Promise<void> {
    return this.submit<void>({ kind: "abort", key, abort, weight: 1 });
  }

  // ---- inbox ------------------------------------------------------------------------------

  enqueueInbox(key: SessionKey, item: InboxItem): Promise<void> {
    return this.submit<void>({ kind: "enqueue", key, item, weight: 1 });
  }

  pendingInbox(key: SessionKey): Promise<InboxItem[]> {
    return this.reading(() => {
      const entry = this.index.lookup(key);
      return entry === undefined ? [] : this.st.pendingInbox.all(entry.pk).map(inboxItem);
    });
  }

  sessionsAwaitingTurn(): Promise<SessionKey[]> {
    return this.reading(() => this.st.awaitingTurn.all().map(sessionKey));
  }

  // ---- coordination -----------------------------------------------------------------------

  claimInterruption(key: SessionKey, claim: InterruptionClaim): Promise<boolean> {
    return this.submit<boolean>({ kind: "claim", key, claim, weight: 1 });
  }

  beginBoot(bootId: string, at: string, windowStart: string): Promise<number> {
    return this.submit<number>({ kind: "boot-begin", bootId, at, windowStart, weight: 1 });
  }

  endBoot(bootId: string): Promise<void> {
    return this.submit<void>({ kind: "boot-end", bootId, weight: 1 });
  }

  // ---- lifecycle --------------------------------------------------------------------------

  probe(): Promise<void> {
    return this.reading(() => {
      this.st.probe.get();
    });
  }

  /**
   * Refuses new calls from the start; stops the checkpointer, then commits queued writes (held or
   * not), merges the journal (a refused merge leaves rows there for the next open), checkpoints and
   * truncates the WAL, closes the connection and releases the lock. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    this.closed = true;
    this.merger.stop();
    // First the worker, so nothing can make the last commits busy; queued writes wait meanwhile.
    await this.checkpointer.stop();
    this.queue.flushAll();
    this.merger.mergeAll();
    try {
      // The worker is gone: nothing else checkpoints, and shutdown may take the time.
      this.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    } catch {
      // Refused (full disk, I/O): SQLite replays the WAL at the next open.
    }
    this.st.finalizeAll();
    this.db.close(false);
    this.lock.release();
  }

  /** A write hold ended (checkpointer.ts): commit and merge what waited. */
  private resumeWrites(): void {
    if (this.closed) return;
    this.queue.resume();
    this.merger.resume();
  }

  /** Checks for a due scrub on a later macrotask: between transactions, outside any merge loop. */
  private queueScrub(): void {
    if (this.scrubThrough === 0 || this.scrubQueued) return;
    this.scrubQueued = true;
    setImmediate(() => {
      this.scrubQueued = false;
      this.scrubIfMerged();
    });
  }

  /**
   * secure_delete zeroed a deleted session's rows in the pages its deletion (and the merge of
   * its log rows) wrote, but older WAL frames still hold them: once those rows are merged, the
   * WAL is checkpointed and truncated (in the worker, or here without one).
   */
  private scrubIfMerged(): void {
    if (this.closed || this.scrubThrough === 0 || this.journal.countThrough(this.scrubThrough) > 0) return;
    this.scrubThrough = 0;
    if (this.checkpointer.scrub()) return;
    try {
      this.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    } catch {
      // Refused (I/O, a reader): the close truncates the WAL anyway.
    }
  }

  /** The checkpointer worker is gone: back to SQLite's automatic checkpoint inside commits. */
  private checkpointInCommits(): void {
    if (this.closed) return;
    try {
      this.db.exec(`PRAGMA wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
    } catch {
      // The connection is failing anyway; writes will report it.
    }
  }

  private submit<T>(fields: WriteFields<WriteOp>): Promise<T> {
    if (this.closed) return Promise.reject(storeClosed(this.path));
    const { op, settled } = pendingWrite<T, WriteOp>(fields);
    this.queue.push(op);
    return settled;
  }

  private reading<T>(run: () => T): Promise<T> {
    if (this.closed) return Promise.reject(storeClosed(this.path));
    try {
      return Promise.resolve(run());
    } catch (error) {
      return Promise.reject(readFailed(error));
    }
  }
}
