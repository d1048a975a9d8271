/**
 * What-if writers for the event-log bench's PostgreSQL column (diagnostics, not the store): a
 * group-committing append queue like PostgresStore's (what queued while no transaction ran goes
 * in one transaction), with the statements of a batch sent in one of three ways, to measure the
 * changes proposed for the store's writer on the same server and the same writers:
 *  - `batched`: two statements per batch (one UPDATE ... RETURNING over the batch's sessions, one
 *    INSERT of all its events, both from JSON);
 *  - `merged`: two statements per append, awaited one by one (UPDATE ... RETURNING the old head
 *    takes the row lock and advances it; then the INSERT), where the store sends three;
 *  - `pipelined`: the store's three statements per append, each append's in order, but the
 *    batch's appends issued together so the client pipelines them on the one connection.
 * The appends of one batch are to different sessions here (each writer awaits its append).
 */
import type { SQL, TransactionSQL } from "bun";

export type WhatIf = "batched" | "merged" | "pipelined";

interface Pending {
  pk: number;
  sid: string;
  bodies: string[];
  resolve: () => void;
  reject: (error: unknown) => void;
}

export interface WhatIfWriter {
  append(pk: number, sid: string, bodies: string[]): Promise<void>;
  readonly stats: { transactions: number; ops: number; longestBatchMs: number };
}

async function batched(tx: TransactionSQL, batch: Pending[]): Promise<void> {
  const heads = batch.map((op) => ({ pk: op.pk, n: op.bodies.length }));
  const bases: { pk: string; base: number }[] = await tx`UPDATE spar_sessions s SET head = s.head + v.n
    FROM json_to_recordset(${JSON.stringify(heads)}::text::json) AS v(pk bigint, n int)
    WHERE s.pk = v.pk RETURNING s.pk, s.head - v.n AS base`;
  const baseOf = new Map(bases.map((row) => [Number(row.pk), row.base]));
  const rows = batch.flatMap((op) =>
    op.bodies.map((body, j) => ({ p: op.pk, s: (baseOf.get(op.pk) ?? 0) + j + 1, b: body })),
  );
  // A JSON parameter must be cast from text: Bun sends a string bound to ::json as a JSON string.
  await tx`INSERT INTO spar_events (session_pk, seq, body)
    SELECT p, s, b FROM json_to_recordset(${JSON.stringify(rows)}::text::json) AS r(p bigint, s int, b text)`;
}

async function merged(tx: TransactionSQL, op: Pending): Promise<void> {
  const n = op.bodies.length;
  const found: { pk: string; base: number }[] = await tx`UPDATE spar_sessions SET head = head + ${n}
    WHERE app = ${"bench"} AND sid = ${op.sid} RETURNING pk, head - ${n} AS base`;
  const base = found[0]?.base ?? 0;
  const values = op.bodies.map((body, j) => ({ session_pk: op.pk, seq: base + j + 1, body }));
  await tx`INSERT INTO spar_events ${tx(values, "session_pk", "seq", "body")}`;
}

/** The store's three statements (postgres-writes.ts' append without a drained prompt). */
async function storeShaped(tx: TransactionSQL, op: Pending): Promise<void> {
  const found: { pk: string; head: number }[] =
    await tx`SELECT pk, head FROM spar_sessions WHERE app = ${"bench"} AND sid = ${op.sid} FOR UPDATE`;
  const head = found[0]?.head ?? 0;
  const values = op.bodies.map((body, j) => ({ session_pk: op.pk, seq: head + j + 1, body }));
  await tx`INSERT INTO spar_events ${tx(values, "session_pk", "seq", "body")}`;
  await tx`UPDATE spar_sessions SET head = ${head + op.bodies.length} WHERE pk = ${op.pk}`;
}

async function apply(how: WhatIf, tx: TransactionSQL, batch: Pending[]): Promise<void> {
  if (how === "batched") return batched(tx, batch);
  if (how === "pipelined") {
    await Promise.all(batch.map((op) => storeShaped(tx, op)));
    return;
  }
  for (const op of batch) await merged(tx, op);
}

/** A group-committing append queue on `sql` whose batches are written the `how` way. */
export function whatIfWriter(sql: SQL, how: WhatIf): WhatIfWriter {
  const stats = { transactions: 0, ops: 0, longestBatchMs: 0 };
  let queue: Pending[] = [];
  let writing = false;
  const loop = async () => {
    try {
      while (queue.length > 0) {
        const batch = queue;
        queue = [];
        const started = performance.now();
        try {
          await sql.begin((tx) => apply(how, tx, batch));
          stats.transactions++;
          stats.ops += batch.length;
          stats.longestBatchMs = Math.max(stats.longestBatchMs, performance.now() - started);
          for (const op of batch) op.resolve();
        } catch (error) {
          for (const op of batch) op.reject(error);
        }
      }
    } finally {
      writing = false;
    }
  };
  return {
    stats,
    append: (pk, sid, bodies) =>
      new Promise<void>((resolve, reject) => {
        queue.push({ pk, sid, bodies, resolve, reject });
        if (!writing) {
          writing = true;
          void Promise.resolve().then(loop);
        }
      }),
  };
}
