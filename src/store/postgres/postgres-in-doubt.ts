/**
 * A commit in doubt (D501): the connection failed while COMMIT was on its way, so the client
 * cannot know whether the server committed. The writer reads its transaction's id
 * (`txid_current()`) just before COMMIT; after such a failure it asks the server what became of
 * that id (`txid_status`, PostgreSQL 10 and later, no schema of ours) on another connection,
 * polling while the server is unreachable or the transaction is still finishing, for a bounded
 * time. Owns only that question; what the writer does with the answer is postgres-store.ts's.
 */
import type { SQL, TransactionSQL } from "bun";
import { isConnectionLevel } from "./postgres-errors.ts";

/** What the server says became of a transaction; `unknown`: it did not say in time. */
export type CommitOutcome = "committed" | "aborted" | "unknown";

/** The default bound on waiting for the server to say (D501): a restart's usual length, with room. */
export const IN_DOUBT_WAIT_MS = 30_000;

/** The first pause between questions; it doubles up to a second. */
const FIRST_PAUSE_MS = 50;
const LONGEST_PAUSE_MS = 1000;

/** The running transaction's id (assigning one if it has written nothing yet), as text. */
export async function transactionId(tx: TransactionSQL): Promise<string> {
  const rows: { xid: string }[] = await tx`SELECT txid_current()::text AS xid`;
  const xid = rows[0]?.xid;
  if (xid === undefined) throw new Error("txid_current() returned no row");
  return xid;
}

export interface OutcomeQuestion {
  /** Where to ask: the pool (a fresh connection once the stale ones are gone). */
  sql: SQL;
  xid: string;
  /** Give up (`unknown`) after this long. */
  waitMs: number;
  /** Called after each attempt the server did not answer (it is still down). */
  onUnreachable?: (error: unknown) => void;
}

/**
 * Ask until the server says `committed` or `aborted`, or `waitMs` passes. An id the server no
 * longer knows (older than its commit log keeps) is `unknown` at once; a failure that is not the
 * connection's (a permission refused) too.
 */
export async function commitOutcome(question: OutcomeQuestion): Promise<CommitOutcome> {
  const { sql, xid, waitMs, onUnreachable } = question;
  const deadline = performance.now() + waitMs;
  let pause = FIRST_PAUSE_MS;
  for (;;) {
    try {
      const rows: { status: string | null }[] = await sql`SELECT txid_status(${xid}::bigint) AS status`;
      const status = rows[0]?.status ?? null;
      if (status === "committed" || status === "aborted") return status;
      if (status === null) return "unknown";
      // "in progress": its backend has not finished the COMMIT, or not yet noticed its client left.
    } catch (error) {
      if (!isConnectionLevel(error)) return "unknown";
      onUnreachable?.(error);
    }
    if (performance.now() + pause > deadline) return "unknown";
    // Poll: PostgreSQL has no wake-up for "the server is back" or "this transaction ended".
    await Bun.sleep(pause);
    pause = Math.min(pause * 2, LONGEST_PAUSE_MS);
  }
}
