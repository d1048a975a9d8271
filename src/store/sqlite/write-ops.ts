/**
 * The write side of the sqlite store: the op types the writer queue carries and the batch
 * writer that commits a batch in ONE immediate transaction. The batch's event rows, whatever
 * sessions they belong to, go into ONE row of the append-ordered `log` table (D150; merge.ts later
 * re-encodes them into per-session `event_blocks`), mirrored in JournalMemory. Expected failures (conflict, not_found) are found before an op writes anything,
 * so they fail that op alone; a store-level refusal (SQLITE_FULL, READONLY, IOERR, ...) rolls back
 * and rejects the whole batch with `unavailable`; any other statement failure rolls back and
 * retries the ops one per transaction so only the culprit fails. Settles every op's promise.
 * Never schedules (group-commit.ts and merge.ts do).
 */
import type { Database } from "bun:sqlite";
import type { CommittedRow, SessionEvent } from "../../core/events.ts";
import { type StoreWriteOp, type StoreWriteStats, zeroWriteStats } from "../store-write-op.ts";
import type { InboxItem, SessionRecord } from "../../core/session-store.ts";
import { encodeTraceCarrier } from "../../core/trace-carrier.ts";
import type { SessionKey } from "../../core/session-key.ts";
import { alreadyAborted, promptNotPending, promptQueued, sessionExists, sessionNotFound } from "../store-rules.ts";
import type { QueuedOp } from "./group-commit.ts";
import type { JournalMemory } from "./journal.ts";
import { sessionParams } from "./row-codec.ts";
import type { SessionIndex } from "./session-index.ts";
import { isBusy, isStoreLevel, opFailed, writeRefused } from "./sqlite-errors.ts";
import type { Statements } from "./statements.ts";

export type WriteOp = StoreWriteOp & QueuedOp;

/** The writer's counters since open (longestBatchMs: the event loop held, WAL auto-checkpoints included). */
export interface WriterStats extends StoreWriteStats {
  /** Batches declined because the database was busy, and retried. */
  busyRetries: number;
}

export class BatchWriter {
  readonly stats: WriterStats = { ...zeroWriteStats(), busyRetries: 0 };
  private readonly txn: (batch: WriteOp[]) => void;
  private txRows = 0;

  constructor(
    private readonly db: Database,
    private readonly st: Statements,
    private readonly index: SessionIndex,
    private readonly journal: JournalMemory,
  ) {
    // Not db.transaction(): prepared BEGIN/COMMIT cost less per commit (~25 us measured); a
    // failure anywhere leaves the transaction open and undo() rolls it back.
    this.txn = (batch: WriteOp[]) => {
      st.begin.run();
      for (const op of batch) this.apply(op);
      const log = this.journal.logRow();
      if (log !== undefined) st.insertLog.run(log[0], log[1]);
      st.commit.run();
    };
  }

  /**
   * Commits a batch and settles each op's promise: true. False (only when `mayDecline`): the
   * database was busy; nothing was written or settled, the caller retries the batch later.
   */
  commitBatch(batch: WriteOp[], mayDecline: boolean): boolean {
    const started = performance.now();
    const settled = this.commit(batch, mayDecline);
    const ms = performance.now() - started;
    if (ms > this.stats.longestBatchMs) this.stats.longestBatchMs = ms;
    if (!settled) {
      this.stats.busyRetries++;
      return false;
    }
    this.stats.batches++;
    if (batch.length > this.stats.largestBatch) this.stats.largestBatch = batch.length;
    return true;
  }

  private commit(batch: WriteOp[], mayDecline = false): boolean {
    this.txRows = 0;
    try {
      this.txn(batch);
    } catch (error) {
      this.undo(batch);
      if (mayDecline && isBusy(error)) return false;
      if (isStoreLevel(error) || batch.length === 1) {
        if (isStoreLevel(error)) this.stats.refused++;
        const failure = isStoreLevel(error) ? writeRefused(error) : opFailed(error);
        for (const op of batch) op.reject(failure);
      } else {
        for (const op of batch) this.commit([op]);
      }
      return true;
    }
    this.index.commit();
    this.journal.commit();
    this.stats.transactions++;
    this.stats.ops += batch.length;
    this.stats.rows += this.txRows;
    for (const op of batch) {
      if (op.error === undefined) op.resolve(op.result);
      else op.reject(op.error);
    }
    return true;
  }

  /** After a failed transaction: nothing of it may survive, in the file or in memory. */
  private undo(batch: WriteOp[]): void {
    if (this.db.inTransaction) {
      try {
        this.db.exec("ROLLBACK");
      } catch {
        // The connection already rolled back or is unusable; the next BEGIN reports which.
      }
    }
    this.index.rollback();
    this.journal.rollback();
    for (const op of batch) {
      op.result = undefined;
      op.error = undefined;
    }
  }

  private apply(op: WriteOp): void {
    switch (op.kind) {
      case "append":
        return this.append(op);
      case "create":
        return this.create(op.record, op);
      case "delete":
        return this.remove(op.key, op);
      case "touch": {
        const entry = this.existing(op.key, op);
        if (entry !== undefined) this.st.touch.run(op.at, entry.pk);
        return;
      }
      case "title": {
        const entry = this.existing(op.key, op);
        if (entry !== undefined) this.st.setTitle.run(op.title, entry.pk);
        return;
      }
      case "acl": {
        const entry = this.existing(op.key, op);
        if (entry !== undefined)
          this.st.setAcl.run(JSON.stringify(op.viewers), JSON.stringify(op.contributors), entry.pk);
        return;
      }
      case "enqueue":
        return this.enqueue(op.key, op.item, op);
      case "abort": {
        const entry = this.existing(op.key, op);
        if (entry === undefined) return;
        const { at, reason, by } = op.abort;
        if (this.st.setAbort.run(at, reason, by, entry.pk).changes === 0) op.error = alreadyAborted(op.key);
        return;
      }
      case "claim": {
        const { interruption, owner, now, expiresAt } = op.claim;
        op.result =
          this.st.claimInterruption.get(op.key.app, op.key.id, interruption, owner, expiresAt, now, owner) !== null;
        return;
      }
      case "boot-begin":
        op.result = this.st.uncleanBootsSince.get(op.windowStart, op.bootId)?.count ?? 0;
        this.st.beginBoot.run(op.bootId, op.at);
        return;
      case "boot-end":
        this.st.endBoot.run(op.bootId);
        return;
      default:
        return assertNever(op);
    }
  }

  private append(op: Extract<WriteOp, { kind: "append" }>): void {
    const entry = this.existing(op.key, op);
    if (entry === undefined) return;
    for (const promptId of op.drained) {
      const state = this.st.inboxState.get(entry.pk, promptId);
      if (state === null || state.drained !== 0) {
        op.error = promptNotPending(promptId, op.key);
        return;
      }
    }
    const head = this.index.head(entry);
    const n = op.events.length;
    const rows: CommittedRow[] = new Array(n);
    for (let i = 0; i < n; i++) rows[i] = { seq: head + i + 1, event: op.events[i] as SessionEvent };
    for (const promptId of op.drained) this.st.drainInbox.run(entry.pk, promptId);
    this.index.advance(entry, head + n);
    this.journal.stageAppend(entry.pk, rows, op.payloads);
    this.txRows += op.events.length;
    op.result = rows;
  }

  private create(record: SessionRecord, op: WriteOp): void {
    const key = { app: record.app, id: record.id };
    if (this.index.lookup(key) !== undefined) {
      op.error = sessionExists(key);
      return;
    }
    const { lastInsertRowid } = this.st.insertSession.run(...sessionParams(record));
    this.st.clearTombstone.run(record.app, record.id);
    this.index.add(key, Number(lastInsertRowid));
  }

  private remove(key: SessionKey, op: WriteOp): void {
    const entry = this.index.lookup(key);
    if (entry === undefined) {
      op.result = false;
      return;
    }
    // Its rows in log bodies stay until merged; load and merge skip them (pks are never reused).
    this.st.deleteBlocks.run(entry.pk);
    this.journal.stageDrop(entry.pk);
    this.st.deleteInbox.run(entry.pk);
    this.st.tombstone.run(new Date().toISOString(), entry.pk);
    this.st.deleteSessionRow.run(entry.pk);
    this.index.remove(key);
    op.result = true;
  }

  private enqueue(key: SessionKey, item: InboxItem, op: WriteOp): void {
    const entry = this.existing(key, op);
    if (entry === undefined) return;
    if (this.st.inboxState.get(entry.pk, item.promptId) !== null) {
      op.error = promptQueued(item.promptId, key);
      return;
    }
    this.st.insertInbox.run(
      entry.pk,
      item.promptId,
      item.message,
      item.queuedAt,
      item.wake ? 1 : 0,
      encodeTraceCarrier(item.trace),
    );
  }

  private existing(key: SessionKey, op: WriteOp) {
    const entry = this.index.lookup(key);
    if (entry === undefined) op.error = sessionNotFound(key);
    return entry;
  }
}

function assertNever(value: never): never {
  throw new Error(`unhandled write op ${JSON.stringify(value)}`);
}
