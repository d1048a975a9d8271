/**
 * The postgres store's group commit: one batch of write ops in one transaction on the connection
 * the writer keeps for itself (D502), and what each failure means for the batch's callers (D500): a
 * statement's failure fails its op alone, a store-level one fails the batch (after retrying on a
 * fresh connection when the connection failed before COMMIT), and a COMMIT whose connection failed
 * is in doubt: the server is asked what became of it before anyone is answered (D501,
 * postgres-in-doubt.ts). Never schedules (postgres-store.ts's write loop does).
 */
import type { ReservedSQL, SQL, TransactionSQL } from "bun";
import type { StoreWriteStats } from "../store-write-op.ts";
import {
  commitInDoubt,
  isConnectionLevel,
  isRetryable,
  isStoreLevel,
  opFailed,
  writeRefused,
} from "./postgres-errors.ts";
import { commitOutcome, IN_DOUBT_WAIT_MS, transactionId } from "./postgres-in-doubt.ts";
import { applyOps, type PgWriteOp } from "./postgres-writes.ts";
import type { Fence, TransactionFound } from "./postgres-append-run.ts";
import type { WriterLock } from "./writer-lock.ts";

/** The writer's counters since open (longestBatchMs: BEGIN to COMMIT; the event loop runs meanwhile). */
export interface PostgresStoreStats extends StoreWriteStats {
  /** Transactions retried (deadlock, serialization failure, a connection lost before COMMIT, a commit in doubt found aborted). */
  retries: number;
  /** COMMITs whose connection failed, so the writer asked the server what became of them (D501). */
  inDoubt: number;
}

export interface CommitterOptions {
  /** Whose session leases fence the appends (a shared database, D487, D492). */
  fence?: Fence | undefined;
  /** How long a commit in doubt waits for the server to say whether it committed (default 30 s; D501). */
  inDoubtWaitMs?: number;
  /**
   * A failpoint for tests only: runs in each write transaction after its ops, just before COMMIT
   * (to make that COMMIT wait or fail on the server). Never set by a daemon.
   */
  beforeCommit?: (tx: TransactionSQL) => Promise<void>;
}

/**
 * Attempts of a transaction: after a deadlock or serialization race (single ops), a connection
 * failure before COMMIT (a stale connection, the server restarting), or a commit in doubt the
 * server says aborted.
 */
const RETRIES = 3;

/**
 * The writer's own connection (D502): write transactions run one at a time on it, and it is
 * closed after a store-level failure, so the next write opens a new one that sees the server as
 * it is now (a database switched back from read-only, a restarted server), never a pooled
 * connection opened meanwhile.
 */
export class BatchWriter {
  private connection: ReservedSQL | undefined;

  constructor(
    /** A pool of one connection, the writer's alone. */
    private readonly writes: SQL,
    readonly options: CommitterOptions,
  ) {}

  /** The open connection, or a new one. */
  async get(): Promise<ReservedSQL> {
    this.connection ??= await this.writes.reserve();
    return this.connection;
  }

  /** Close the connection (it failed, or its session may be read-only); the next write opens another. */
  drop(): void {
    const connection = this.connection;
    this.connection = undefined;
    connection?.close().catch(() => {});
  }

  async close(): Promise<void> {
    this.connection?.release();
    this.connection = undefined;
    await this.writes.close({ timeout: 5 }).catch(() => {});
  }
}

export class BatchCommitter {
  private readonly options: CommitterOptions;

  constructor(
    /** The pool: where a commit in doubt is asked about. */
    private readonly sql: SQL,
    private readonly writer: BatchWriter,
    private readonly lock: WriterLock | undefined,
    private readonly stats: PostgresStoreStats,
    /** Refuses the writes queued meanwhile (a commit in doubt waits for an unreachable server). */
    private readonly refusePending: (error: unknown) => void,
  ) {
    this.options = writer.options;
  }

  /** Settles every op of `batch`: resolved with its result or rejected, never left pending. */
  async commit(batch: PgWriteOp[], attempt = 1): Promise<void> {
    let rows = 0;
    // Read just before COMMIT: set means the failure (if any) came at COMMIT itself.
    let xid: string | undefined;
    try {
      const connection = await this.writer.get();
      await connection.begin(async (tx) => {
        rows = 0;
        xid = undefined;
        // An append run reads the transaction's id on its way (D501): no statement of its own then.
        const found: TransactionFound = {};
        rows = await applyOps(tx, batch, this.options.fence, found);
        await this.options.beforeCommit?.(tx);
        xid = found.xid ?? (await transactionId(tx));
      });
    } catch (error) {
      if (isStoreLevel(error))
        await this.storeFailed(batch, attempt, error, xid === undefined ? undefined : { xid, rows });
      else await this.statementFailed(batch, attempt, error);
      return;
    }
    this.committed(batch, rows);
  }

  private committed(batch: PgWriteOp[], rows: number): void {
    this.stats.transactions++;
    this.stats.ops += batch.length;
    this.stats.rows += rows;
    for (const op of batch) {
      if (op.error === undefined) op.resolve(op.result);
      else op.reject(op.error);
    }
  }

  /** A statement failed (the server answered, the transaction rolled back): only the culprit fails. */
  private async statementFailed(batch: PgWriteOp[], attempt: number, error: unknown): Promise<void> {
    if (batch.length > 1) {
      for (const op of batch) await this.commit([op]);
    } else if (isRetryable(error) && attempt < RETRIES) {
      this.stats.retries++;
      await this.commit(batch, attempt + 1);
    } else {
      for (const op of batch) op.reject(opFailed(error));
    }
  }

  /**
   * The store failed as a whole. Its connection is replaced (a read-only one may be a failover's
   * leftover, D502). A connection failure before COMMIT wrote nothing, so the batch runs again on
   * a fresh connection (a server restart leaves pooled connections that fail once each); one AT
   * COMMIT (`committing` known) is in doubt and never simply retried (D501).
   */
  private async storeFailed(
    batch: PgWriteOp[],
    attempt: number,
    error: unknown,
    committing: { xid: string; rows: number } | undefined,
  ): Promise<void> {
    if (this.lock) this.lock.suspect = true;
    this.writer.drop();
    if (isConnectionLevel(error)) {
      if (committing !== undefined) return await this.inDoubt(batch, attempt, error, committing);
      if (attempt < RETRIES) {
        this.stats.retries++;
        return await this.commit(batch, attempt + 1);
      }
    }
    this.refuse(batch, writeRefused(error));
  }

  /**
   * Ask the server what became of the transaction (D501): committed, the ops answer their results;
   * aborted, the batch runs again (nothing of it was written); no answer in time, every op fails
   * saying the write may have been applied. Writes queued meanwhile while the server does not
   * answer are refused at once (never attempted: nothing written), so callers are not held.
   */
  private async inDoubt(
    batch: PgWriteOp[],
    attempt: number,
    error: unknown,
    committing: { xid: string; rows: number },
  ): Promise<void> {
    this.stats.inDoubt++;
    const waitMs = this.options.inDoubtWaitMs ?? IN_DOUBT_WAIT_MS;
    const outcome = await commitOutcome({
      sql: this.sql,
      xid: committing.xid,
      waitMs,
      onUnreachable: this.refusePending,
    });
    if (outcome === "committed") return this.committed(batch, committing.rows);
    if (outcome === "aborted" && attempt < RETRIES) {
      this.stats.retries++;
      return await this.commit(batch, attempt + 1);
    }
    this.refuse(batch, outcome === "aborted" ? writeRefused(error) : commitInDoubt(error, committing.xid, waitMs));
  }

  private refuse(batch: PgWriteOp[], failure: unknown): void {
    this.stats.refused++;
    for (const op of batch) op.reject(failure);
  }

  /** Closes the writer's connection. */
  async close(): Promise<void> {
    await this.writer.close();
  }
}
