/**
 * SqliteReader: the StoreReader of a sqlite store file, for the operator CLI. It opens the file
 * through a read-only connection and takes no lock (not the daemon's lock file, not a write lock),
 * so it reads a store no daemon holds and one a daemon is serving alike, and never changes a byte
 * of it: no migration, no WAL switch, no checkpoint. A session's rows are its merged
 * `event_blocks` and its segments of the `log` table not merged yet, read in one transaction (a
 * merge moves rows from one to the other in one transaction, so the two never overlap or miss),
 * decoded by the daemon's own codec and block reader (log-codec.ts, block-reader.ts).
 */
import { Database } from "bun:sqlite";
import { existsSync, statSync } from "node:fs";
import type { CommittedRow } from "../../core/events.ts";
import { SparError } from "../../core/errors.ts";
import type { SessionKey } from "../../core/session-key.ts";
import type { SessionRecord } from "../../core/session-store.ts";
import type { StoreReader } from "../../core/store-reader.ts";
import { BlockReader } from "./block-reader.ts";
import { decodeLogBody, segmentRows } from "./log-codec.ts";
import { SCHEMA_VERSION } from "./migrations.ts";
import { SPAR_APPLICATION_ID } from "./open-db.ts";
import { type SessionRow, sessionRecord } from "./row-codec.ts";
import { LOAD_LOG_SQL, READ_BLOCKS_SQL } from "./statements.ts";
import { errorMessage, readerFailed, schemaRefusal } from "../store-rules.ts";
import { isBusy, sqliteCode } from "./sqlite-errors.ts";

/** How long a read waits on a lock a writer holds for a moment (WAL readers rarely wait at all). */
const READ_BUSY_TIMEOUT_MS = 5000;

export class SqliteReader implements StoreReader {
  readonly #db: Database;
  readonly #blocks: BlockReader;

  private constructor(
    db: Database,
    readonly source: string,
  ) {
    this.#db = db;
    this.#blocks = new BlockReader(db.prepare(READ_BLOCKS_SQL), source);
  }

  /** Opens `path` read-only; throws SparError `unavailable` naming it when it is missing or not a spar store. */
  static open(path: string): SqliteReader {
    if (!existsSync(path)) throw new SparError("unavailable", `session store ${path} does not exist`);
    if (!statSync(path).isFile()) throw new SparError("unavailable", `session store ${path} is not a file`);
    let db: Database;
    try {
      db = new Database(path, { readonly: true, strict: true });
    } catch (error) {
      throw new SparError("unavailable", `cannot open session store ${path} read-only: ${errorMessage(error)}`);
    }
    try {
      db.exec(`PRAGMA busy_timeout = ${READ_BUSY_TIMEOUT_MS}`);
      checkOurs(db, path);
    } catch (error) {
      db.close(false);
      throw failure(path, error);
    }
    return new SqliteReader(db, path);
  }

  listSessions(): Promise<SessionRecord[]> {
    return this.#reading(() =>
      this.#db.query<SessionRow, []>("SELECT * FROM sessions ORDER BY pk").all().map(sessionRecord),
    );
  }

  readRows(sessions: readonly SessionKey[]): Promise<CommittedRow[][]> {
    return this.#reading(() =>
      this.#db.transaction(() => {
        const pks = sessions.map((key) => this.#pk(key));
        const wanted = new Set(pks.filter((pk): pk is number => pk !== undefined));
        const tails = this.#logTails(wanted);
        return pks.map((pk) =>
          pk === undefined ? [] : [...this.#blocks.read(pk, 0, Number.MAX_SAFE_INTEGER), ...(tails.get(pk) ?? [])],
        );
      })(),
    );
  }

  async close(): Promise<void> {
    this.#db.close(false);
  }

  #pk(key: SessionKey): number | undefined {
    return this.#db
      .query<{ pk: number }, [string, string]>("SELECT pk FROM sessions WHERE app = ? AND sid = ?")
      .get(key.app, key.id)?.pk;
  }

  /** The unmerged rows of the wanted sessions, from the `log` table (one group commit per row). */
  #logTails(wanted: ReadonlySet<number>): Map<number, CommittedRow[]> {
    const tails = new Map<number, CommittedRow[]>();
    if (wanted.size === 0) return tails;
    for (const { id, body } of this.#db.query<{ id: number; body: string }, []>(LOAD_LOG_SQL).all()) {
      for (const segment of decodeLogBody(body, id, this.source)) {
        const pk = segment[0];
        if (!wanted.has(pk)) continue;
        const tail = tails.get(pk) ?? [];
        for (const row of segmentRows(segment)) tail.push(row);
        tails.set(pk, tail);
      }
    }
    return tails;
  }

  async #reading<T>(read: () => T): Promise<T> {
    try {
      return read();
    } catch (error) {
      throw failure(this.source, error);
    }
  }
}

/** Refuses a file that is not a spar store, or one of a schema this build cannot read without migrating it. */
function checkOurs(db: Database, path: string): void {
  const application = db.query<{ application_id: number }, []>("PRAGMA application_id").get()?.application_id;
  if (application !== SPAR_APPLICATION_ID)
    throw new SparError("unavailable", `${path} is not a spar session store (its application_id is not SPAR)`);
  const version = db.query<{ user_version: number }, []>("PRAGMA user_version").get()?.user_version ?? 0;
  const refused = schemaRefusal(path, version, SCHEMA_VERSION, { reader: true });
  if (refused !== undefined) throw refused;
}

function failure(path: string, error: unknown): SparError {
  if (error instanceof SparError) return error;
  const code = sqliteCode(error);
  if (code?.startsWith("SQLITE_NOTADB") || code?.startsWith("SQLITE_CORRUPT"))
    return new SparError("unavailable", `${path} is not a spar session store (${errorMessage(error)})`);
  if (isBusy(error))
    return new SparError(
      "unavailable",
      `session store ${path} stayed locked for ${READ_BUSY_TIMEOUT_MS / 1000} s; try again`,
    );
  return readerFailed(path, error);
}
