/**
 * PostgresStore: the Store (session rows, tombstones, durable inbox, event log, daemon
 * coordination) on PostgreSQL through Bun.sql, for daemons that outgrow one machine. A daemon's
 * store shares the database with other daemons (`shared`: appends fenced by session leases,
 * postgres-cluster.ts, D487); a store opened alone holds the database's writer lock
 * (writer-lock.ts, D261). Appends lock their session rows, so seqs stay contiguous per session;
 * claims and boot records coordinate auto-continue as on sqlite.
 *
 * Writes go through one queue: the ops requested while no transaction runs (one event-loop tick,
 * or everything that arrived during the previous commit) are applied in request order in ONE
 * transaction (group commit), so an enqueue and the append draining it in one tick work as on
 * sqlite. An op's expected failure (conflict, not_found) fails it alone; a store-level failure
 * (connection, read-only, disk full, shutdown; postgres-errors.ts, D500) rejects the whole batch
 * with `unavailable`, a connection failure before COMMIT after retrying on a fresh connection; any
 * other statement failure rolls back and retries the ops one per transaction so only the culprit
 * fails. A COMMIT whose connection failed is in doubt: the writer asks the server whether it
 * committed before it answers anyone (postgres-in-doubt.ts, D501). Transactions run on the
 * writer's own connection, replaced after a store-level failure (D502). Reads run on the
 * pool and see committed state only. Events are stored as their JSON text, one row each.
 */
import { commitSpan } from "../../telemetry/commit-trace.ts";
import { checkAppend, readRange, storeClosed } from "../store-rules.ts";
import { type WriteFields, batchSize, pendingWrite, zeroWriteStats } from "../store-write-op.ts";
import { SQL } from "bun";
import { type WriterLease, WriterLock } from "./writer-lock.ts";
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
import {
  inboxItem,
  type InboxRow,
  type KeyRow,
  sessionKey,
  type SessionRow,
  sessionRecord,
} from "../sqlite/row-codec.ts";
import { isConnectionLevel, openFailed, postgresWhere, readFailed, writeRefused } from "./postgres-errors.ts";
import { BatchCommitter, BatchWriter, type CommitterOptions, type PostgresStoreStats } from "./postgres-commit.ts";
import { POOL_DEFAULT, sqlOptions } from "./postgres-connection.ts";
import { migrate } from "./postgres-schema.ts";
import type { PgWriteOp } from "./postgres-writes.ts";
import { PostgresCluster } from "./postgres-cluster.ts";

export interface PostgresStoreOptions extends CommitterOptions {
  /** Connections to the server at most, the writer's own among them (default 10; `--session-db-pool`, D515). */
  maxConnections?: number;
  /** Give up connecting (at open and later) after this long, seconds (default 10). */
  connectTimeoutSeconds?: number;
  /**
   * Hold the database's writer lock from open to close (default true: a daemon's store, one per
   * database, writer-lock.ts). false only where several stores share one database on purpose.
   */
  writerLock?: boolean;
  /** How often the writer lock's holder speaks and how long a silent one keeps it (default 10 s, 30 s; D374). */
  writerLease?: WriterLease;
  /**
   * Share the database with other daemons (D487): no writer lock; appends need the session's lease
   * held by `daemonId` and announce their rows; `cluster` offers leases, commands and announcements.
   */
  shared?: { daemonId: string; leaseApp?: ((app: string) => string) | undefined };
}

export type { PostgresStoreStats } from "./postgres-commit.ts";

/** The largest seq (a PostgreSQL integer): a read's bound when no uptoSeq is given. */
const MAX_SEQ = 2 ** 31 - 1;

/** Attempts of a read: a connection failure is retried on another connection. */
const RETRIES = 3;

export class PostgresStore implements Store {
  readonly stats: PostgresStoreStats = { ...zeroWriteStats(), retries: 0, inDoubt: 0 };
  private pending: PgWriteOp[] = [];
  private readonly committer: BatchCommitter;
  /** The running write loop, if any. */
  private writing: Promise<void> | undefined;
  private closed = false;
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly sql: SQL,
    /** The URL without its password, for messages. */
    readonly where: string,
    private readonly lock: WriterLock | undefined,
    writer: BatchWriter,
    /** Leases, commands and announcements when the database is shared (D487). */
    readonly cluster: PostgresCluster | undefined,
  ) {
    this.committer = new BatchCommitter(sql, writer, lock, this.stats, (error) => this.refusePending(error));
  }

  /**
   * Connects, migrates the schema and answers; throws SparError `unavailable` naming the URL
   * (credentials redacted) when the server is unreachable, refuses the login or the database is
   * missing, within the connect timeout, never hanging.
   */
  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const where = postgresWhere(url);
    const timeoutSeconds = options.connectTimeoutSeconds ?? 10;
    let sql: SQL;
    let writes: SQL;
    try {
      // The URL's sslmode, sslrootcert, sslcert and sslkey rule TLS: no tls option here (D516).
      const pool = sqlOptions({
        maxConnections: options.maxConnections ?? POOL_DEFAULT,
        connectTimeoutSeconds: timeoutSeconds,
      });
      // The writer's own connection (D502) is one of maxConnections.
      sql = new SQL(url, { ...pool, max: Math.max(1, pool.max - 1) });
      writes = new SQL(url, { ...pool, max: 1 });
    } catch (error) {
      throw openFailed(where, error);
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(new SparError("unavailable", `cannot open session store ${where}: no answer in ${timeoutSeconds} s`)),
        timeoutSeconds * 1000 + 500,
      );
    });
    let lock: WriterLock | undefined;
    try {
      await Promise.race([migrate(sql, where), deadline]);
      if (options.writerLock !== false && options.shared === undefined)
        lock = await Promise.race([WriterLock.acquire(sql, where, options.writerLease), deadline]);
    } catch (error) {
      await Promise.all([sql.close({ timeout: 0 }), writes.close({ timeout: 0 })]).catch(() => {});
      throw openFailed(where, error);
    } finally {
      clearTimeout(timer);
    }
    const cluster = options.shared === undefined ? undefined : new PostgresCluster(sql, options.shared.daemonId);
    return new PostgresStore(
      sql,
      where,
      lock,
      new BatchWriter(writes, {
        ...options,
        ...(options.shared === undefined
          ? {}
          : { fence: { holder: options.shared.daemonId, leaseApp: options.shared.leaseApp } }),
      }),
      cluster,
    );
  }

  // ---- event log --------------------------------------------------------------------------

  append(session: SessionKey, events: readonly SessionEvent[], options?: AppendOptions): Promise<CommittedRow[]> {
    const checked = checkAppend(events, options);
    if (!checked.ok) return Promise.reject(checked.error);
    if (checked.value === undefined) return Promise.resolve([]);
    return this.submit<CommittedRow[]>({ kind: "append", key: session, events, ...checked.value });
  }

  read(session: SessionKey, afterSeq: number, limit: number, uptoSeq?: number): Promise<CommittedRow[]> {
    const range = readRange(afterSeq, limit, uptoSeq, MAX_SEQ);
    if (range === undefined) return this.reading(async () => []);
    const { lo, hi } = range;
    return this.reading(async () => {
      const rows: { seq: number; body: string }[] = await this.sql`SELECT e.seq, e.body FROM spar_events e
        JOIN spar_sessions s ON s.pk = e.session_pk
        WHERE s.app = ${session.app} AND s.sid = ${session.id} AND e.seq > ${lo} AND e.seq <= ${hi}
        ORDER BY e.seq`;
      return rows.map((row) => ({ seq: row.seq, event: JSON.parse(row.body) as SessionEvent }));
    });
  }

  /** 0 for a session without events, and for an unknown session. */
  head(session: SessionKey): Promise<number> {
    return this.reading(async () => {
      const rows: { head: number }[] = await this
        .sql`SELECT head FROM spar_sessions WHERE app = ${session.app} AND sid = ${session.id}`;
      return rows[0]?.head ?? 0;
    });
  }

  // ---- sessions ---------------------------------------------------------------------------

  createSession(record: SessionRecord): Promise<void> {
    return this.submit<void>({ kind: "create", record });
  }

  getSession(key: SessionKey): Promise<SessionRecord | undefined> {
    return this.reading(async () => {
      const rows: SessionRow[] = await this.sql`SELECT * FROM spar_sessions WHERE app = ${key.app} AND sid = ${key.id}`;
      const row = rows[0];
      return row === undefined ? undefined : sessionRecord(row);
    });
  }

  listSessions(): Promise<SessionRecord[]> {
    return this.reading(async () => {
      const rows: SessionRow[] = await this.sql`SELECT * FROM spar_sessions ORDER BY pk`;
      return rows.map(sessionRecord);
    });
  }

  findSessionsById(id: string): Promise<SessionKey[]> {
    return this.reading(async () => {
      const rows: KeyRow[] = await this.sql`SELECT app, sid FROM spar_sessions WHERE sid = ${id} ORDER BY app`;
      return rows.map(sessionKey);
    });
  }

  deleteSession(key: SessionKey): Promise<boolean> {
    return this.submit<boolean>({ kind: "delete", key });
  }

  deletedSessions(id: string): Promise<DeletedSession[]> {
    return this.reading(async () => {
      const rows: DeletedSession[] = await this
        .sql`SELECT app, owner FROM spar_tombstones WHERE sid = ${id} ORDER BY app`;
      return rows.map((row) => ({ app: row.app, owner: row.owner }));
    });
  }

  touchSession(key: SessionKey, at: string): Promise<void> {
    return this.submit<void>({ kind: "touch", key, at });
  }

  setTitle(key: SessionKey, title: string | undefined): Promise<void> {
    return this.submit<void>({ kind: "title", key, title: title ?? null });
  }

  setAcl(key: SessionKey, viewers: readonly string[], contributors: readonly string[]): Promise<void> {
    return this.submit<void>({ kind: "acl", key, viewers, contributors });
  }

  abortSession(key: SessionKey, abort: SessionAbort): Promise<void> {
    return this.submit<void>({ kind: "abort", key, abort });
  }

  // ---- inbox ------------------------------------------------------------------------------

  enqueueInbox(key: SessionKey, item: InboxItem): Promise<void> {
    return this.submit<void>({ kind: "enqueue", key, item });
  }

  pendingInbox(key: SessionKey): Promise<InboxItem[]> {
    return this.reading(async () => {
      const rows: {
        prompt_id: string;
        message: string;
        queued_at: string;
        wake: boolean;
        trace_context: string | null;
      }[] = await this.sql`SELECT i.prompt_id, i.message, i.queued_at, i.wake, i.trace_context FROM spar_inbox i
        JOIN spar_sessions s ON s.pk = i.session_pk
        WHERE s.app = ${key.app} AND s.sid = ${key.id} AND NOT i.drained ORDER BY i.ord`;
      return rows.map((row): InboxItem => inboxItem({ ...row, wake: row.wake ? 1 : 0 } satisfies InboxRow));
    });
  }

  sessionsAwaitingTurn(): Promise<SessionKey[]> {
    return this.reading(async () => {
      const rows: KeyRow[] = await this.sql`SELECT s.app, s.sid FROM spar_sessions s
        WHERE EXISTS (SELECT 1 FROM spar_inbox i WHERE i.session_pk = s.pk AND NOT i.drained AND i.wake)
        ORDER BY s.pk`;
      return rows.map(sessionKey);
    });
  }

  // ---- coordination -----------------------------------------------------------------------

  claimInterruption(key: SessionKey, claim: InterruptionClaim): Promise<boolean> {
    return this.submit<boolean>({ kind: "claim", key, claim });
  }

  beginBoot(bootId: string, at: string, windowStart: string): Promise<number> {
    return this.submit<number>({ kind: "boot-begin", bootId, at, windowStart });
  }

  endBoot(bootId: string): Promise<void> {
    return this.submit<void>({ kind: "boot-end", bootId });
  }

  // ---- lifecycle --------------------------------------------------------------------------

  probe(): Promise<void> {
    return this.reading(async () => {
      await this.sql`SELECT 1 FROM spar_events LIMIT 1`;
    });
  }

  /** Refuses new calls from the start; commits queued writes, then closes the pool. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    this.closed = true;
    while (this.writing !== undefined) await this.writing;
    await this.committer.close();
    await this.lock?.release();
    await this.cluster?.close();
    await this.sql.close({ timeout: 5 }).catch(() => {});
  }

  // ---- the write queue --------------------------------------------------------------------

  private submit<T>(fields: WriteFields<PgWriteOp>): Promise<T> {
    if (this.closed) return Promise.reject(storeClosed(this.where));
    const { op, settled } = pendingWrite<T, PgWriteOp>(fields);
    this.pending.push(op);
    // The loop starts after this tick's other requests joined the batch.
    this.writing ??= Promise.resolve().then(() => this.writeLoop());
    return settled;
  }

  /** Commits batches until nothing is pending; each batch is what queued while the last one ran. */
  private async writeLoop(): Promise<void> {
    try {
      while (this.pending.length > 0) {
        const batch = this.pending;
        this.pending = [];
        const started = performance.now();
        if (!(await this.lockHeld(batch))) continue;
        const span = commitSpan(
          "postgresql",
          "spar",
          batch.map((op) => op.trace),
        );
        await this.committer.commit(batch);
        span?.end({ ...batchSize(batch), committed: true });
        this.stats.longestBatchMs = Math.max(this.stats.longestBatchMs, performance.now() - started);
        this.stats.batches++;
        this.stats.largestBatch = Math.max(this.stats.largestBatch, batch.length);
      }
    } finally {
      this.writing = undefined;
    }
  }

  /** The writes queued behind a commit in doubt while the server is unreachable: refused, unattempted (D501). */
  private refusePending(error: unknown): void {
    if (this.pending.length === 0) return;
    const queued = this.pending;
    this.pending = [];
    this.stats.refused++;
    for (const op of queued) op.reject(writeRefused(error));
  }

  /** After a store-level failure: the writer lock confirmed (or taken again) first; else the batch is refused. */
  private async lockHeld(batch: PgWriteOp[]): Promise<boolean> {
    try {
      await this.lock?.ensure();
      return true;
    } catch (error) {
      this.stats.refused++;
      for (const op of batch) op.reject(writeRefused(error));
      return false;
    }
  }

  /** Reads are retried on another connection after a connection failure, like writes before COMMIT. */
  private async reading<T>(run: () => Promise<T>): Promise<T> {
    if (this.closed) throw storeClosed(this.where);
    for (let attempt = 1; ; attempt++) {
      try {
        return await run();
      } catch (error) {
        if (!isConnectionLevel(error) || attempt >= RETRIES || this.closed) throw readFailed(error);
      }
    }
  }
}
