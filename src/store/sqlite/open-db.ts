/**
 * Opening a sqlite session-store file: refuses foreign or corrupt files before changing a byte,
 * takes the single-daemon lock (D18: locking_mode=EXCLUSIVE plus an immediate exclusive
 * transaction), sets WAL and synchronous, stamps application_id on a new file, and migrates.
 * Owns nothing after it returns the Database; never reads or writes session data.
 */
import { Database } from "bun:sqlite";
import { closeSync, existsSync, openSync, readSync, statSync } from "node:fs";
import { SparError } from "../../core/errors.ts";
import { migrate } from "./migrations.ts";
import { errorMessage, inUseError, isBusy, notOursError, sqliteCode } from "./sqlite-errors.ts";

/** 'SPAR' in ASCII. */
export const SPAR_APPLICATION_ID = 0x53504152;
const SQLITE_MAGIC = "SQLite format 3\0";
/** The 100-byte database header plus the b-tree header of page 1 (sqlite_schema). */
const HEADER_BYTES = 108;
const FOREIGN = "its application_id is not SPAR and it already holds tables or other data";
/** Short: a second daemon should be refused at once, not after a wait. */
const BUSY_TIMEOUT_MS = 100;
/** Page cache of the one connection, in KiB (negative PRAGMA value): keeps replays off the disk. */
export const CACHE_KIB = 32768;
/**
 * WAL pages before an automatic checkpoint (SQLite's default is 1000; 16000 pages = 64 MiB).
 * Appends from many sessions dirty at least one leaf page per session per commit; a longer WAL
 * lets one checkpoint write each page once for many commits. Measured on the bench: 1.4-2x the
 * events/s of 1000 pages, at the cost of a longer pause (~60 ms) in the commit that checkpoints.
 */
export const WAL_AUTOCHECKPOINT_PAGES = 16000;

export interface OpenOptions {
  synchronous?: "NORMAL" | "FULL";
  /** PRAGMA max_page_count for this connection: caps the file size. */
  maxPageCount?: number;
}

/** Opens, locks, and migrates `path`; throws SparError `unavailable` with a message naming it. */
export function openDatabase(path: string, options: OpenOptions = {}): Database {
  preflight(path);
  let db: Database;
  try {
    db = new Database(path, { create: true, strict: true });
  } catch (error) {
    throw openFailure(path, error);
  }
  try {
    configure(db, path, options);
    return db;
  } catch (error) {
    db.close(false);
    throw openFailure(path, error);
  }
}

function configure(db: Database, path: string, options: OpenOptions): void {
  db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
  db.exec("PRAGMA locking_mode = EXCLUSIVE");
  // Take the write lock now and keep it for the life of the connection.
  db.exec("BEGIN EXCLUSIVE");
  db.exec("COMMIT");
  const owner = ownership(db);
  if (owner === "foreign") throw notOursError(path, FOREIGN);
  if (owner === "empty") db.exec(`PRAGMA application_id = ${SPAR_APPLICATION_ID}`);
  const mode = db.query<{ journal_mode: string }, []>("PRAGMA journal_mode = WAL").get();
  if (mode?.journal_mode.toLowerCase() !== "wal") {
    throw new SparError("unavailable", `session store ${path} could not switch to WAL (got ${mode?.journal_mode})`);
  }
  db.exec(`PRAGMA synchronous = ${options.synchronous === "FULL" ? "FULL" : "NORMAL"}`);
  db.exec(`PRAGMA cache_size = -${CACHE_KIB}`);
  db.exec(`PRAGMA wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
  migrate(db, path);
  if (options.maxPageCount !== undefined) {
    db.exec(`PRAGMA max_page_count = ${Math.max(1, Math.floor(options.maxPageCount))}`);
  }
}

/** `ours`: stamped SPAR; `empty`: no tables at all (adoptable); `foreign`: anything else. */
function ownership(db: Database): "ours" | "empty" | "foreign" {
  const app = db.query<{ application_id: number }, []>("PRAGMA application_id").get();
  if (app?.application_id === SPAR_APPLICATION_ID) return "ours";
  const tables = db.query<{ n: number }, []>("SELECT count(*) AS n FROM sqlite_schema").get();
  return (tables?.n ?? 0) === 0 ? "empty" : "foreign";
}

/**
 * Checks an existing non-empty file without writing to it or creating files beside it: SQLite
 * magic, then the SPAR application_id or no tables. Read from the header and page 1 when the
 * main file is authoritative; when a non-empty WAL sits beside it, ask SQLite through a
 * read-only connection (which sees the WAL).
 */
function preflight(path: string): void {
  if (!existsSync(path)) return;
  const stat = statSync(path);
  if (!stat.isFile()) throw notOursError(path, "it is not a regular file");
  if (stat.size === 0) return;
  const header = readHeader(path);
  if (header.length < HEADER_BYTES || header.toString("latin1", 0, 16) !== SQLITE_MAGIC) {
    throw notOursError(path, "it is not a SQLite database");
  }
  if (header.readUInt32BE(68) === SPAR_APPLICATION_ID) return;
  const wal = `${path}-wal`;
  if (!existsSync(wal) || statSync(wal).size === 0) {
    if (schemaPageIsEmpty(header)) return;
    throw notOursError(path, FOREIGN);
  }
  let ro: Database | undefined;
  try {
    ro = new Database(path, { readonly: true, strict: true });
    if (ownership(ro) === "foreign") throw notOursError(path, FOREIGN);
  } catch (error) {
    throw openFailure(path, error);
  } finally {
    ro?.close(false);
  }
}

/** Page 1 holds the sqlite_schema b-tree: a leaf table page (0x0d) with zero cells means no tables. */
function schemaPageIsEmpty(header: Buffer): boolean {
  return header[100] === 0x0d && header.readUInt16BE(103) === 0;
}

function readHeader(path: string): Buffer {
  const fd = openSync(path, "r");
  try {
    const buffer = Buffer.alloc(HEADER_BYTES);
    const n = readSync(fd, buffer, 0, HEADER_BYTES, 0);
    return buffer.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

function openFailure(path: string, error: unknown): SparError {
  if (error instanceof SparError) return error;
  if (isBusy(error)) return inUseError(path);
  const code = sqliteCode(error);
  if (code?.startsWith("SQLITE_NOTADB") || code?.startsWith("SQLITE_CORRUPT")) {
    return notOursError(path, errorMessage(error));
  }
  return new SparError("unavailable", `cannot open session store ${path}: ${errorMessage(error)}`, {
    sqlite_code: code ?? null,
  });
}
