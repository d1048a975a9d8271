/**
 * SqliteStore: the embedded Store (session rows, tombstones, durable inbox, event log) on one
 * bun:sqlite connection that this daemon alone holds (D18). Every write goes through one
 * group-commit queue and lands in one immediate transaction per tick; reads run directly on
 * prepared statements and see committed state only. Must not be opened twice on one file, and
 * must not be used from several threads.
 */
import type { Database } from "bun:sqlite";
import type { AppendOptions } from "../../core/event-log.ts";
import type { CommittedRow, SessionEvent } from "../../core/events.ts";
import { SparError } from "../../core/errors.ts";
import type { InboxItem, SessionRecord, Store } from "../../core/session-store.ts";
import type { SessionKey } from "../../core/session-key.ts";
import { GroupCommit, type FlushOn } from "./group-commit.ts";
import { openDatabase } from "./open-db.ts";
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
  /** PRAGMA max_page_count: caps the file size; writes past it are refused with `unavailable`. */
  maxPageCount?: number;
}

export type SqliteStoreStats = WriterStats;

/** What a caller supplies for an op; the promise and outcome fields are added by submit. */
type OpFields<K extends WriteOp["kind"] = WriteOp["kind"]> = K extends WriteOp["kind"]
  ? Omit<Extract<WriteOp, { kind: K }>, "resolve" | "reject" | "result" | "error">
  : never;

/** Upper bound for `read` when no uptoSeq is given. */
const NO_UPPER = Number.MAX_SAFE_INTEGER;

export class SqliteStore implements Store {
  private readonly st: Statements;
  private readonly index: SessionIndex;
  private readonly writer: BatchWriter;
  private readonly queue: GroupCommit<WriteOp>;
  private closed = false;

  private constructor(
    private readonly db: Database,
    readonly path: string,
    options: SqliteStoreOptions,
  ) {
    this.st = new Statements(db);
    this.index = new SessionIndex(this.st);
    this.writer = new BatchWriter(db, this.st, this.index);
    this.queue = new GroupCommit((batch) => this.writer.commitBatch(batch), {
      flushOn: options.flushOn ?? "microtask",
      maxBatchRows: options.maxBatchRows ?? 2048,
    });
  }

  /** Opens (creating if absent) and locks `path`; throws SparError `unavailable` on failure. */
  static open(path: string, options: SqliteStoreOptions = {}): SqliteStore {
    const open: { synchronous?: "NORMAL" | "FULL"; maxPageCount?: number } = {};
    if (options.synchronous !== undefined) open.synchronous = options.synchronous;
    if (options.maxPageCount !== undefined) open.maxPageCount = options.maxPageCount;
    return new SqliteStore(openDatabase(path, open), path, options);
  }

  /** Counters of the writer since open (a copy). */
  get stats(): SqliteStoreStats {
    return { ...this.writer.stats };
  }

  // ---- event log --------------------------------------------------------------------------

  append(session: SessionKey, events: readonly SessionEvent[], options?: AppendOptions): Promise<CommittedRow[]> {
    const drained = options?.drainedPromptIds ?? [];
    if (events.length === 0) {
      if (drained.length > 0) {
        return Promise.reject(new SparError("bad_request", "drainedPromptIds given without events to record them"));
      }
      return Promise.resolve([]);
    }
    if (drained.length > 1 && new Set(drained).size !== drained.length) {
      return Promise.reject(new SparError("bad_request", "drainedPromptIds holds a prompt id twice"));
    }
    const payloads: string[] = new Array(events.length);
    try {
      for (let i = 0; i < events.length; i++) payloads[i] = JSON.stringify(events[i]);
    } catch (error) {
      return Promise.reject(new SparError("bad_request", `event is not serializable: ${String(error)}`));
    }
    return this.submit<CommittedRow[]>({ kind: "append", key: session, events, payloads, drained, weight: events.length });
  }

  read(session: SessionKey, afterSeq: number, limit: number, uptoSeq?: number): Promise<CommittedRow[]> {
    return this.reading(() => {
      const entry = this.index.lookup(session);
      if (entry === undefined || limit <= 0) return [];
      const raw = this.st.readEvents.values(entry.pk, afterSeq, uptoSeq ?? NO_UPPER, Math.floor(limit));
      const rows: CommittedRow[] = new Array(raw.length);
      for (let i = 0; i < raw.length; i++) {
        const r = raw[i] as [number, string];
        rows[i] = { seq: r[0], event: JSON.parse(r[1]) as SessionEvent };
      }
      return rows;
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

  isTombstoned(key: SessionKey): Promise<boolean> {
    return this.reading(() => this.st.isTombstoned.get(key.app, key.id) !== null);
  }

  touchSession(key: SessionKey, at: string): Promise<void> {
    return this.submit<void>({ kind: "touch", key, at, weight: 1 });
  }

  setTitle(key: SessionKey, title: string | undefined): Promise<void> {
    return this.submit<void>({ kind: "title", key, title: title ?? null, weight: 1 });
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

  // ---- lifecycle --------------------------------------------------------------------------

  probe(): Promise<void> {
    return this.reading(() => {
      this.st.probe.get();
    });
  }

  /** Commits queued writes, then closes the connection (releasing the lock). Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.queue.flush();
    this.closed = true;
    this.st.finalizeAll();
    this.db.close(false);
  }

  private submit<T>(fields: OpFields): Promise<T> {
    if (this.closed) return Promise.reject(this.closedError());
    const { promise, resolve, reject } = Promise.withResolvers<T>();
    const op = fields as WriteOp;
    op.resolve = resolve as (value: unknown) => void;
    op.reject = reject;
    op.result = undefined;
    op.error = undefined;
    this.queue.push(op);
    return promise;
  }

  private reading<T>(run: () => T): Promise<T> {
    if (this.closed) return Promise.reject(this.closedError());
    try {
      return Promise.resolve(run());
    } catch (error) {
      return Promise.reject(readFailed(error));
    }
  }

  private closedError(): SparError {
    return new SparError("unavailable", `session store ${this.path} is closed`);
  }
}
