/**
 * WriterLock: one spar daemon per PostgreSQL database. A daemon's session host keeps an index
 * of the sessions it serves and assumes it is their only writer (D258), so the store holds a
 * session-level advisory lock on a connection reserved for it, from open to close; a second daemon
 * on the same database is refused at open, naming the database. Readers (`svc sessions list`)
 * never take it. A server restart ends the holding connection and with it the lock: after a
 * store-level failure the store asks `ensure` before its next write, which takes the lock again on
 * a fresh connection or refuses the write when another daemon got it meanwhile.
 *
 * A holder the server still believes alive after its daemon is gone (the host crashed, the network
 * parted: the server only notices at its TCP keepalive, hours later) would hold the lock forever.
 * So the holder speaks on its connection every `pingMs` (10 s), and a daemon that finds the lock
 * held by a backend silent for `staleAfterMs` (30 s, the run-lock steal) ends that backend
 * and takes the lock (D374). A live holder is never silent that long.
 */
import type { ReservedSQL, SQL } from "bun";
import { SparError } from "../../core/errors.ts";

/** Any fixed key, distinct from the migration lock's. */
const WRITER_LOCK = 0x5350_4157;

/** How often the holder speaks, and how long a silent holder keeps the lock (D374). */
export interface WriterLease {
  pingMs: number;
  staleAfterMs: number;
}

export const DEFAULT_WRITER_LEASE: WriterLease = { pingMs: 10_000, staleAfterMs: 30_000 };

export class WriterLock {
  /** Set after a store-level failure: the holding connection may be gone, and the lock with it. */
  suspect = false;
  #ping: ReturnType<typeof setInterval> | undefined;

  private constructor(
    private readonly sql: SQL,
    private holder: ReservedSQL,
    private readonly where: string,
    private readonly lease: WriterLease,
  ) {
    this.#ping = setInterval(() => {
      // A failed ping is a store-level failure: `ensure` checks before the next write.
      this.holder`SELECT 1`.catch(() => {
        this.suspect = true;
      });
    }, lease.pingMs);
    this.#ping.unref?.();
  }

  /** Take the lock (ending a holder silent past the lease), or throw `unavailable` naming the database. */
  static async acquire(sql: SQL, where: string, lease: WriterLease = DEFAULT_WRITER_LEASE): Promise<WriterLock> {
    return new WriterLock(sql, await take(sql, where, lease), where, lease);
  }

  /** Confirm the lock is still held (after a store-level failure); take it again if its connection died. */
  async ensure(): Promise<void> {
    if (!this.suspect) return;
    try {
      await this.holder`SELECT 1`;
    } catch {
      this.holder.release();
      this.holder = await take(this.sql, this.where, this.lease);
    }
    this.suspect = false;
  }

  /** Give the lock back (close); a dead connection has given it back already. */
  async release(): Promise<void> {
    clearInterval(this.#ping);
    try {
      await this.holder`SELECT pg_advisory_unlock(${WRITER_LOCK})`;
    } catch {
      // The server ended the session, and the lock with it.
    }
    this.holder.release();
  }
}

async function take(sql: SQL, where: string, lease: WriterLease): Promise<ReservedSQL> {
  const holder = await sql.reserve();
  try {
    if (await tryLock(holder)) return holder;
    if ((await endStaleHolder(holder, lease.staleAfterMs)) && (await retryLock(holder))) return holder;
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

async function tryLock(holder: ReservedSQL): Promise<boolean> {
  const rows: { locked: boolean }[] = await holder`SELECT pg_try_advisory_lock(${WRITER_LOCK}) AS locked`;
  return rows[0]?.locked === true;
}

/**
 * End the backend holding the writer lock when it has been silent (no query, no state change)
 * for `staleAfterMs`; true when one was ended. Its own role may end it (no superuser needed).
 */
async function endStaleHolder(holder: ReservedSQL, staleAfterMs: number): Promise<boolean> {
  const rows: { ended: boolean }[] = await holder`
    SELECT pg_terminate_backend(activity.pid) AS ended
      FROM pg_locks AS locks JOIN pg_stat_activity AS activity ON activity.pid = locks.pid
     WHERE locks.locktype = 'advisory' AND locks.granted
       AND locks.classid::bigint = 0 AND locks.objid::bigint = ${WRITER_LOCK} AND locks.objsubid = 1
       AND locks.database = (SELECT oid FROM pg_database WHERE datname = current_database())
       AND activity.pid <> pg_backend_pid()
       AND activity.state_change < clock_timestamp() - make_interval(secs => ${staleAfterMs / 1000})`;
  return rows.some((row) => row.ended);
}

/** The ended backend lets go of its lock as it exits: ask again for up to two seconds. */
async function retryLock(holder: ReservedSQL): Promise<boolean> {
  for (let attempt = 0; attempt < 40; attempt++) {
    if (await tryLock(holder)) return true;
    // Poll: the terminated backend's exit releases the lock within milliseconds.
    await Bun.sleep(50);
  }
  return false;
}
