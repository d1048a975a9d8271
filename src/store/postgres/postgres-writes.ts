/**
 * The write side of the postgres store: the op types its writer queue carries and how one op is
 * applied inside a transaction. Expected failures (conflict, not_found) are found before an op
 * writes anything and recorded on the op, so they fail that op alone without aborting the
 * transaction. An append locks its session row (FOR UPDATE) and assigns seqs from the row's
 * `head`, so daemons sharing the database still get a contiguous seq per session. Never schedules
 * and never commits (postgres-store.ts does).
 */
import type { TransactionSQL } from "bun";
import type { StoreWriteOp } from "../store-write-op.ts";
import { encodeTraceCarrier } from "../../core/trace-carrier.ts";
import type { InboxItem, SessionRecord } from "../../core/session-store.ts";
import type { SessionKey } from "../../core/session-key.ts";
import { alreadyAborted, promptQueued, sessionExists, sessionNotFound } from "../store-rules.ts";
import { LIVENESS_CLASS } from "./postgres-cluster.ts";
import { type Fence, type TransactionFound, appendRun } from "./postgres-append-run.ts";

export type PgWriteOp = StoreWriteOp;

/**
 * Applies a batch's ops in `tx` in request order, each run of consecutive appends in a handful of
 * statements (postgres-append-run.ts, D491); returns the event rows written.
 */
export async function applyOps(
  tx: TransactionSQL,
  ops: readonly PgWriteOp[],
  fence?: Fence,
  found?: TransactionFound,
): Promise<number> {
  let rows = 0;
  let run: AppendOp[] = [];
  for (const op of ops) {
    op.result = undefined;
    op.error = undefined;
    if (op.kind === "append") {
      run.push(op);
      continue;
    }
    if (run.length > 0) rows += await appendRun(tx, run, fence, found);
    run = [];
    rows += await applyOp(tx, op, fence);
  }
  if (run.length > 0) rows += await appendRun(tx, run, fence, found);
  return rows;
}

/**
 * Applies one op in `tx`; returns the event rows it wrote. `fence`: whose lease an append needs
 * when several daemons share the database (D487); its rows are then announced.
 */
export async function applyOp(tx: TransactionSQL, op: PgWriteOp, fence?: Fence): Promise<number> {
  switch (op.kind) {
    case "append":
      return appendRun(tx, [op], fence);
    case "create":
      await create(tx, op.record, op);
      return 0;
    case "delete":
      op.result = await remove(tx, op.key);
      return 0;
    case "enqueue":
      await enqueue(tx, op.key, op.item, op);
      return 0;
    case "claim": {
      const { interruption, owner, now, expiresAt } = op.claim;
      const rows = await tx`INSERT INTO spar_interruption_claims (app, sid, interruption, owner, expires_at)
        VALUES (${op.key.app}, ${op.key.id}, ${interruption}, ${owner}, ${expiresAt})
        ON CONFLICT (app, sid, interruption) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
        WHERE spar_interruption_claims.expires_at <= ${now} OR spar_interruption_claims.owner = ${owner}
        RETURNING owner`;
      op.result = rows.length > 0;
      return 0;
    }
    case "boot-begin": {
      // A run that still holds its liveness lock is running, not stopped uncleanly (D490): several
      // daemons may share the database.
      const rows: { count: number }[] = await tx`SELECT count(*)::int AS count FROM spar_daemon_boots b
        WHERE NOT b.clean AND b.started_at >= ${op.windowStart} AND b.boot_id <> ${op.bootId}
          AND NOT EXISTS (SELECT 1 FROM pg_locks AS lk WHERE lk.locktype = 'advisory' AND lk.granted
            AND lk.classid = ${LIVENESS_CLASS}::oid AND lk.objid = hashtext(b.boot_id)::oid AND lk.objsubid = 2
            AND lk.database = (SELECT oid FROM pg_database WHERE datname = current_database()))`;
      op.result = rows[0]?.count ?? 0;
      await tx`INSERT INTO spar_daemon_boots (boot_id, started_at) VALUES (${op.bootId}, ${op.at})`;
      return 0;
    }
    case "boot-end":
      await tx`UPDATE spar_daemon_boots SET clean = true WHERE boot_id = ${op.bootId}`;
      return 0;
    default:
      await updateSession(tx, op);
      return 0;
  }
}

type SessionUpdate = Extract<PgWriteOp, { kind: "touch" | "title" | "acl" | "abort" }>;

async function updateSession(tx: TransactionSQL, op: SessionUpdate): Promise<void> {
  const pk = await existing(tx, op.key, op);
  if (pk === undefined) return;
  switch (op.kind) {
    case "touch":
      await tx`UPDATE spar_sessions SET last_touched_at = ${op.at} WHERE pk = ${pk}`;
      return;
    case "title":
      await tx`UPDATE spar_sessions SET title = ${op.title} WHERE pk = ${pk}`;
      return;
    case "acl":
      await tx`UPDATE spar_sessions SET viewers = ${JSON.stringify(op.viewers)},
        contributors = ${JSON.stringify(op.contributors)} WHERE pk = ${pk}`;
      return;
    case "abort": {
      const { at, reason, by } = op.abort;
      const rows = await tx`UPDATE spar_sessions SET aborted_at = ${at}, abort_reason = ${reason}, aborted_by = ${by}
        WHERE pk = ${pk} AND aborted_at IS NULL RETURNING pk`;
      if (rows.length === 0) op.error = alreadyAborted(op.key);
      return;
    }
    default:
      return assertNever(op);
  }
}

type AppendOp = Extract<PgWriteOp, { kind: "append" }>;

async function create(tx: TransactionSQL, record: SessionRecord, op: PgWriteOp): Promise<void> {
  const inserted =
    await tx`INSERT INTO spar_sessions (app, sid, owner, viewers, contributors, title, created_at, last_touched_at)
    VALUES (${record.app}, ${record.id}, ${record.owner}, ${JSON.stringify(record.viewers)},
      ${JSON.stringify(record.contributors)}, ${record.title ?? null}, ${record.createdAt}, ${record.lastTouchedAt})
    ON CONFLICT (app, sid) DO NOTHING RETURNING pk`;
  if (inserted.length === 0) {
    op.error = sessionExists(record);
    return;
  }
  await tx`DELETE FROM spar_tombstones WHERE app = ${record.app} AND sid = ${record.id}`;
}

async function remove(tx: TransactionSQL, key: SessionKey): Promise<boolean> {
  const deleted: { pk: string; owner: string }[] =
    await tx`DELETE FROM spar_sessions WHERE app = ${key.app} AND sid = ${key.id} RETURNING pk, owner`;
  const row = deleted[0];
  if (row === undefined) return false;
  await tx`DELETE FROM spar_events WHERE session_pk = ${row.pk}`;
  await tx`DELETE FROM spar_inbox WHERE session_pk = ${row.pk}`;
  await tx`DELETE FROM spar_session_leases WHERE session_pk = ${row.pk}`;
  await tx`DELETE FROM spar_session_commands WHERE session_pk = ${row.pk}`;
  await tx`INSERT INTO spar_tombstones (app, sid, deleted_at, owner)
    VALUES (${key.app}, ${key.id}, ${new Date().toISOString()}, ${row.owner})
    ON CONFLICT (app, sid) DO UPDATE SET deleted_at = excluded.deleted_at, owner = excluded.owner`;
  return true;
}

async function enqueue(tx: TransactionSQL, key: SessionKey, item: InboxItem, op: PgWriteOp): Promise<void> {
  const pk = await existing(tx, key, op);
  if (pk === undefined) return;
  const inserted = await tx`INSERT INTO spar_inbox (session_pk, prompt_id, message, queued_at, wake, trace_context)
    VALUES (${pk}, ${item.promptId}, ${item.message}, ${item.queuedAt}, ${item.wake}, ${encodeTraceCarrier(item.trace)})
    ON CONFLICT (session_pk, prompt_id) DO NOTHING RETURNING ord`;
  if (inserted.length === 0) op.error = promptQueued(item.promptId, key);
}

async function existing(tx: TransactionSQL, key: SessionKey, op: PgWriteOp): Promise<string | undefined> {
  const rows: { pk: string }[] = await tx`SELECT pk FROM spar_sessions WHERE app = ${key.app} AND sid = ${key.id}`;
  const pk = rows[0]?.pk;
  if (pk === undefined) op.error = sessionNotFound(key);
  return pk;
}

function assertNever(value: never): never {
  throw new Error(`unhandled write op ${JSON.stringify(value)}`);
}
