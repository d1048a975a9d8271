/**
 * WriterLock: one spar daemon per PostgreSQL database. A daemon's session host keeps an index
 * of the sessions it serves and assumes it is their only writer (D258), so the store holds a
 * session-level advisory lock on a connection reserved for it, from open to close; a second daemon
 * on the same database is refused at open, naming the database. Readers (`svc sessions list`)
 * never take it. A server restart ends the holding connection and with it the lock: after a
 * store-level failure the store asks `ensure` before its next write, which takes the lock again on
 * a fresh connection or refuses the write when another daemon got it meanwhile.
 */
import type { ReservedSQL, SQL } from "bun";
import { SparError } from "../../core/errors.ts";

/** Any fixed key, distinct from the migration lock's. */
const WRITER_LOCK = 0x5350_4157;

export class WriterLock {
  /** Set after a store-level failure: the holding connection may be gone, and the lock with it. */
  suspect = false;

  private constructor(
    private readonly sql: SQL,
    private holder: ReservedSQL,
    private readonly where: string,
  ) {}

  /** Take the lock, or throw `unavailable` naming the database when another daemon holds it. */
  static async acquire(sql: SQL, where: string): Promise<WriterLock> {
    return new WriterLock(sql, await take(sql, where), where);
  }

  /** Confirm the lock is still held (after a store-level failure); take it again if its connection died. */
  async ensure(): Promise<void> {
    if (!this.suspect) return;
    try {
      await this.holder`SELECT 1`;
    } catch {
      this.holder.release();
      this.holder = await take(this.sql, this.where);
    }
    this.suspect = false;
  }

  /** Give the lock back (close); a dead connection has given it back already. */
  async release(): Promise<void> {
    try {
      await this.holder`SELECT pg_advisory_unlock(${WRITER_LOCK})`;
    } catch {
      // The server ended the session, and the lock with it.
    }
    this.holder.release();
  }
}

async function take(sql: SQL, where: string): Promise<ReservedSQL> {
  const holder = await sql.reserve();
  try {
    const rows: { locked: boolean }[] = await holder`SELECT pg_try_advisory_lock(${WRITER_LOCK}) AS locked`;
    if (rows[0]?.locked === true) return holder;
  } catch (error) {
    holder.release();
    throw error;
  }
  holder.release();
  throw new SparError(
    "unavailable",
    `session store ${where} is in use by another spar daemon (it holds the database's writer lock); one daemon per database`,
  );
}
