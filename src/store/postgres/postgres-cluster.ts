/**
 * PostgresCluster: SessionCluster on the postgres store's pool (D487). Lease times are the
 * database's clock (`clock_timestamp()`), never a daemon's, so skewed hosts agree on who holds a
 * session. Announcements are NOTIFY on three channels, sent inside the transaction that commits
 * what they announce (a rolled-back write announces nothing); the store's appends announce their
 * rows themselves (postgres-writes.ts). Payloads are JSON text.
 */
import type { ReservedSQL, SQL } from "bun";
import type { ClusterSignals, LeaseOutcome, PendingCommand, SessionCluster } from "../../core/session-cluster.ts";
import type { SessionKey } from "../../core/session-key.ts";
import { SparError } from "../../core/errors.ts";
import type { KeyRow } from "../sqlite/row-codec.ts";
import { sessionKey } from "../sqlite/row-codec.ts";
import { isStoreLevel, sqlState } from "./postgres-errors.ts";
import { errorMessage } from "../store-rules.ts";

export const ROWS_CHANNEL = "spar_rows";
export const COMMANDS_CHANNEL = "spar_commands";
export const RESULTS_CHANNEL = "spar_results";

/**
 * The advisory-lock class of daemons' liveness locks (D490): each daemon run holds
 * (LIVENESS_CLASS, hashtext(its id)) on a connection of its own while it lives; PostgreSQL drops the
 * lock the moment that connection ends (the process died, or the server restarted), so a lease
 * whose holder's lock is free can be taken at once instead of after its expiry. A hash collision
 * only makes a dead holder look alive: its leases then wait for their expiry.
 */
export const LIVENESS_CLASS = 0x5350_4c56;

/** Answered commands are kept this long (a waiter reads its result well within it), then pruned. */
const ANSWERED_KEPT_SECONDS = 3600;

/** An announcement's payload at most, in bytes (NOTIFY refuses 8,000 and more). */
const INLINE_MAX_BYTES = 7_000;

/** Whether an announcement carrying `value` fits NOTIFY's payload (JSON escaping may grow it a little). */
function fits(value: unknown): boolean {
  return Buffer.byteLength(JSON.stringify(value)) * 1.1 < INLINE_MAX_BYTES;
}

/** The command an announcement carries, if it does. */
function inlineCommand(payload: string): PendingCommand | undefined {
  try {
    const parsed = JSON.parse(payload) as { id?: unknown; op?: unknown; args?: unknown };
    const id = Number(parsed.id);
    if (!Number.isSafeInteger(id) || typeof parsed.op !== "string" || typeof parsed.args !== "string") return undefined;
    return { id, op: parsed.op, args: parsed.args };
  } catch {
    return undefined;
  }
}

/** A result announcement: the command's id and, when it fits, its answer. */
function resultOf(payload: string): { id: number; result: string | undefined } | undefined {
  try {
    const parsed = JSON.parse(payload) as { id?: unknown; result?: unknown } | number;
    const id = Number(typeof parsed === "object" && parsed !== null ? parsed.id : parsed);
    if (!Number.isSafeInteger(id)) return undefined;
    const result =
      typeof parsed === "object" && parsed !== null && typeof parsed.result === "string" ? parsed.result : undefined;
    return { id, result };
  } catch {
    return undefined;
  }
}

export class PostgresCluster implements SessionCluster {
  /** The connection holding this daemon's liveness lock; taken again after it dies. */
  #alive: ReservedSQL | undefined;
  #closed = false;

  constructor(
    private readonly sql: SQL,
    readonly daemonId: string,
  ) {}

  /** Hold this daemon's liveness lock (again, after its connection died). */
  async keepAlive(): Promise<void> {
    return await this.#guard(async () => {
      if (this.#closed) return;
      if (this.#alive !== undefined) {
        try {
          await this.#alive`SELECT 1`;
          return;
        } catch {
          this.#alive.release();
          this.#alive = undefined;
        }
      }
      const connection = await this.sql.reserve();
      let taken: { locked: boolean }[];
      try {
        taken = await connection`SELECT pg_try_advisory_lock(${LIVENESS_CLASS}, hashtext(${this.daemonId})) AS locked`;
      } catch (error) {
        connection.release();
        throw error;
      }
      // Still held elsewhere (an earlier connection of this run the server has not let go yet):
      // the next keepAlive tries again, so the run is not left without its mark (D490).
      if (taken[0]?.locked !== true) {
        connection.release();
        return;
      }
      this.#alive = connection;
    });
  }

  /**
   * The database could not be reached or refused (D529): the operation fails `unavailable` as the
   * store's reads do (a 503 naming the session store), never a bare driver error (a 500).
   */
  async #guard<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (error instanceof SparError || !isStoreLevel(error)) throw error;
      throw new SparError("unavailable", `session store unavailable: ${errorMessage(error)}`, {
        sqlstate: sqlState(error) ?? null,
      });
    }
  }

  /** Give the liveness lock back (an orderly stop). */
  async close(): Promise<void> {
    this.#closed = true;
    const connection = this.#alive;
    this.#alive = undefined;
    if (connection === undefined) return;
    await connection`SELECT pg_advisory_unlock_all()`.catch(() => {});
    connection.release();
  }

  async acquireLease(key: SessionKey, ttlMs: number): Promise<LeaseOutcome> {
    return await this.#guard(async () => {
      if (this.#alive === undefined) await this.keepAlive();
      const taken: { holder: string }[] = await this.sql`
        INSERT INTO spar_session_leases (session_pk, holder, expires_at)
        SELECT pk, ${this.daemonId}, clock_timestamp() + make_interval(secs => ${ttlMs / 1000})
          FROM spar_sessions WHERE app = ${key.app} AND sid = ${key.id}
        ON CONFLICT (session_pk) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
          WHERE spar_session_leases.holder = excluded.holder OR spar_session_leases.expires_at <= clock_timestamp()
            OR NOT EXISTS (SELECT 1 FROM pg_locks AS lk WHERE lk.locktype = 'advisory' AND lk.granted
              AND lk.classid = ${LIVENESS_CLASS}::oid AND lk.objid = hashtext(spar_session_leases.holder)::oid
              AND lk.objsubid = 2 AND lk.database = (SELECT oid FROM pg_database WHERE datname = current_database()))
        RETURNING holder`;
      if (taken.length > 0) return { held: true, holder: this.daemonId };
      const current: { holder: string }[] = await this.sql`SELECT l.holder FROM spar_session_leases l
        JOIN spar_sessions s ON s.pk = l.session_pk WHERE s.app = ${key.app} AND s.sid = ${key.id}`;
      return { held: false, holder: current[0]?.holder ?? "" };
    });
  }

  async renewLeases(ttlMs: number): Promise<SessionKey[]> {
    return await this.#guard(async () => {
      await this.keepAlive();
      const rows: KeyRow[] = await this.sql`UPDATE spar_session_leases l
        SET expires_at = clock_timestamp() + make_interval(secs => ${ttlMs / 1000})
        FROM spar_sessions s WHERE l.session_pk = s.pk AND l.holder = ${this.daemonId}
        RETURNING s.app, s.sid`;
      return rows.map(sessionKey);
    });
  }

  async releaseLease(key: SessionKey, lapse: boolean): Promise<void> {
    return await this.#guard(async () => {
      if (lapse)
        await this.sql`UPDATE spar_session_leases l SET expires_at = '-infinity' FROM spar_sessions s
          WHERE l.session_pk = s.pk AND s.app = ${key.app} AND s.sid = ${key.id} AND l.holder = ${this.daemonId}`;
      else
        await this.sql`DELETE FROM spar_session_leases l USING spar_sessions s
          WHERE l.session_pk = s.pk AND s.app = ${key.app} AND s.sid = ${key.id} AND l.holder = ${this.daemonId}`;
    });
  }

  async lapsedLeases(limit: number): Promise<SessionKey[]> {
    return await this.#guard(async () => {
      const rows: KeyRow[] = await this.sql`SELECT s.app, s.sid FROM spar_session_leases l
        JOIN spar_sessions s ON s.pk = l.session_pk
        WHERE (l.expires_at <= clock_timestamp()
            OR NOT EXISTS (SELECT 1 FROM pg_locks AS lk WHERE lk.locktype = 'advisory' AND lk.granted
              AND lk.classid = ${LIVENESS_CLASS}::oid AND lk.objid = hashtext(l.holder)::oid
              AND lk.objsubid = 2 AND lk.database = (SELECT oid FROM pg_database WHERE datname = current_database())))
          AND l.holder <> ${this.daemonId}
        ORDER BY l.expires_at LIMIT ${limit}`;
      return rows.map(sessionKey);
    });
  }

  /** One statement: the row and its announcement, carrying the command when it fits (D494). */
  async postCommand(key: SessionKey, op: string, args: string): Promise<number> {
    const inline = fits({ app: key.app, sid: key.id, id: 0, op, args });
    return await this.#guard(async () => {
      const rows: { id: string }[] = await this.sql`WITH c AS (
          INSERT INTO spar_session_commands (session_pk, op, args)
          SELECT pk, ${op}, ${args} FROM spar_sessions WHERE app = ${key.app} AND sid = ${key.id} RETURNING id)
        SELECT c.id, pg_notify(${COMMANDS_CHANNEL}, CASE WHEN ${inline}
          THEN json_build_object('app', ${key.app}::text, 'sid', ${key.id}::text, 'id', c.id, 'op', ${op}::text, 'args', ${args}::text)
          ELSE json_build_object('app', ${key.app}::text, 'sid', ${key.id}::text) END::text) AS notified
        FROM c`;
      const id = rows[0]?.id;
      if (id === undefined) throw new SparError("not_found", `session not found: ${key.app}/${key.id}`);
      return Number(id);
    });
  }

  async pendingCommands(key: SessionKey): Promise<PendingCommand[]> {
    return await this.#guard(async () => {
      const rows: { id: string; op: string; args: string }[] = await this.sql`SELECT c.id, c.op, c.args
        FROM spar_session_commands c JOIN spar_sessions s ON s.pk = c.session_pk
        WHERE s.app = ${key.app} AND s.sid = ${key.id} AND c.result IS NULL ORDER BY c.id`;
      return rows.map((row) => ({ id: Number(row.id), op: row.op, args: row.args }));
    });
  }

  /** One statement: the answer and its announcement, carrying the answer when it fits (D494). */
  async completeCommand(id: number, result: string): Promise<void> {
    const inline = fits({ id, result });
    return await this.#guard(async () => {
      await this.sql`UPDATE spar_session_commands SET result = ${result}, answered_at = clock_timestamp()
        WHERE id = ${id} AND result IS NULL
        RETURNING pg_notify(${RESULTS_CHANNEL}, CASE WHEN ${inline}
          THEN json_build_object('id', id, 'result', result) ELSE json_build_object('id', id) END::text)`;
    });
  }

  async pruneAnswered(): Promise<void> {
    await this.#guard(async () => {
      await this.sql`DELETE FROM spar_session_commands
        WHERE answered_at < clock_timestamp() - make_interval(secs => ${ANSWERED_KEPT_SECONDS})`;
    });
  }

  async commandResult(id: number): Promise<string | undefined> {
    return await this.#guard(async () => {
      const rows: { result: string | null }[] = await this
        .sql`SELECT result FROM spar_session_commands WHERE id = ${id}`;
      return rows[0]?.result ?? undefined;
    });
  }

  async listen(signals: ClusterSignals): Promise<() => Promise<void>> {
    const keyOf = (payload: string): { key: SessionKey; head: number } | undefined => {
      try {
        const parsed = JSON.parse(payload) as { app?: unknown; sid?: unknown; head?: unknown };
        if (typeof parsed.app !== "string" || typeof parsed.sid !== "string") return undefined;
        return { key: { app: parsed.app, id: parsed.sid }, head: typeof parsed.head === "number" ? parsed.head : 0 };
      } catch {
        return undefined;
      }
    };
    const subscriptions = [
      await this.sql.listen(
        ROWS_CHANNEL,
        (payload) => {
          const parsed = keyOf(payload);
          if (parsed) signals.rows(parsed.key, parsed.head);
        },
        () => signals.connected(),
      ),
      await this.sql.listen(COMMANDS_CHANNEL, (payload) => {
        const parsed = keyOf(payload);
        if (parsed) signals.command(parsed.key, inlineCommand(payload));
      }),
      await this.sql.listen(RESULTS_CHANNEL, (payload) => {
        const parsed = resultOf(payload);
        if (parsed) signals.result(parsed.id, parsed.result);
      }),
    ];
    return async () => {
      await Promise.all(subscriptions.map((subscription) => subscription.unlisten().catch(() => {})));
    };
  }
}
