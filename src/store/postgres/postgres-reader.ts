/**
 * PostgresReader: the StoreReader of a PostgreSQL store, for the operator CLI. One connection,
 * every read in a `REPEATABLE READ READ ONLY` transaction (one consistent snapshot, and the server
 * refuses any write), no migration and no advisory lock, so it reads a database a daemon is
 * serving as well as an idle one. A database without spar's schema is refused, naming the URL with
 * its credentials as `***`.
 */
import { SQL } from "bun";
import type { CommittedRow, SessionEvent } from "../../core/events.ts";
import { SparError } from "../../core/errors.ts";
import type { SessionKey } from "../../core/session-key.ts";
import type { SessionRecord } from "../../core/session-store.ts";
import type { StoreReader } from "../../core/store-reader.ts";
import { type SessionRow, sessionRecord } from "../sqlite/row-codec.ts";
import { readerFailed, schemaRefusal } from "../store-rules.ts";
import { openFailed, postgresWhere } from "./postgres-errors.ts";
import { PG_SCHEMA_VERSION } from "./postgres-schema.ts";

const CONNECT_TIMEOUT_SECONDS = 10;
/** Sessions whose rows one query reads (bound parameters per statement stay far below PostgreSQL's 65,535). */
const PKS_PER_QUERY = 1000;

export class PostgresReader implements StoreReader {
  readonly #sql: SQL;

  private constructor(
    sql: SQL,
    readonly source: string,
  ) {
    this.#sql = sql;
  }

  /** Connects and checks the schema; throws SparError `unavailable` naming the (redacted) URL. */
  static async open(url: string): Promise<PostgresReader> {
    const where = postgresWhere(url);
    let sql: SQL;
    try {
      sql = new SQL(url, { max: 1, connectionTimeout: CONNECT_TIMEOUT_SECONDS, idleTimeout: 30 });
    } catch (error) {
      throw openFailed(where, error);
    }
    const reader = new PostgresReader(sql, where);
    try {
      await reader.#checkSchema();
    } catch (error) {
      await sql.close({ timeout: 0 }).catch(() => {});
      throw error instanceof SparError ? error : openFailed(where, error);
    }
    return reader;
  }

  listSessions(): Promise<SessionRecord[]> {
    return this.#snapshot(async (tx) => {
      const rows: SessionRow[] = await tx`SELECT * FROM spar_sessions ORDER BY pk`;
      return rows.map(sessionRecord);
    });
  }

  readRows(sessions: readonly SessionKey[]): Promise<CommittedRow[][]> {
    return this.#snapshot(async (tx) => {
      const keys: { pk: number; app: string; sid: string }[] = await tx`SELECT pk, app, sid FROM spar_sessions`;
      const pkOf = new Map(keys.map((key) => [`${key.app}\u0000${key.sid}`, Number(key.pk)]));
      const pks = sessions.map((key) => pkOf.get(`${key.app}\u0000${key.id}`));
      const rows = new Map<number, CommittedRow[]>();
      const wanted = [...new Set(pks.filter((pk): pk is number => pk !== undefined))];
      for (let start = 0; start < wanted.length; start += PKS_PER_QUERY) {
        const chunk = wanted.slice(start, start + PKS_PER_QUERY);
        const found: { session_pk: number; seq: number; body: string }[] =
          await tx`SELECT session_pk, seq, body FROM spar_events WHERE session_pk IN ${tx(chunk)} ORDER BY session_pk, seq`;
        for (const row of found) {
          const pk = Number(row.session_pk);
          const list = rows.get(pk) ?? [];
          list.push({ seq: row.seq, event: JSON.parse(row.body) as SessionEvent });
          rows.set(pk, list);
        }
      }
      return pks.map((pk) => (pk === undefined ? [] : (rows.get(pk) ?? [])));
    });
  }

  async close(): Promise<void> {
    await this.#sql.close({ timeout: 0 }).catch(() => {});
  }

  async #checkSchema(): Promise<void> {
    const version = await this.#snapshot(async (tx) => {
      const tables: { name: string | null }[] = await tx`SELECT to_regclass('spar_schema')::text AS name`;
      if (tables[0]?.name == null) return undefined;
      const rows: { version: number }[] = await tx`SELECT version FROM spar_schema`;
      return rows[0]?.version ?? 0;
    });
    if (version === undefined)
      throw new SparError("unavailable", `${this.source} holds no spar session store (no spar_schema table)`);
    const refused = schemaRefusal(this.source, version, PG_SCHEMA_VERSION, { reader: true });
    if (refused !== undefined) throw refused;
  }

  async #snapshot<T>(read: (tx: SQL) => Promise<T>): Promise<T> {
    try {
      return await this.#sql.begin("ISOLATION LEVEL REPEATABLE READ READ ONLY", (tx) => read(tx as unknown as SQL));
    } catch (error) {
      throw readerFailed(this.source, error);
    }
  }
}
