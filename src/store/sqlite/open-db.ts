/**
 * Opening a sqlite session-store file: takes the single-daemon lock (D18: the sidecar lock file of
 * lock-file.ts), refuses foreign or corrupt files before changing a byte of them, then opens the
 * file with normal locking (created 0600, private-files.ts), sets WAL, synchronous, secure_delete
 * and the checkpoint policy, stamps application_id on a new file, and migrates. Owns nothing after it returns the Database and the lock; never
 * reads or writes session data.
 *
 * The lock comes first so that a second open in this process is refused by SQLite's own lock
 * bookkeeping before the preflight opens the store file through node:fs: closing any descriptor
 * of a file drops every fcntl lock this process holds on it, those of the open store included.
 */
import { Database } from "bun:sqlite";
import { closeSync, existsSync, openSync, readSync, statSync } from "node:fs";
import { SparError } from "../../core/errors.ts";
import { StoreLock } from "./lock-file.ts";
import { migrate } from "./migrations.ts";
import { createPrivateFile, tightenModes } from "../../fs/private-files.ts";
import { errorMessage } from "../store-rules.ts";
import { inUseError, isBusy, notOursError, sqliteCode } from "./sqlite-errors.ts";

/** 'SPAR' in ASCII. */
export const SPAR_APPLICATION_ID = 0x53504152;
const SQLITE_MAGIC = "SQLite format 3\0";
/** The 100-byte database header plus the b-tree header of page 1 (sqlite_schema). */
const HEADER_BYTES = 108;
const FOREIGN = "its application_id is not SPAR and it already holds tables or other data";
/**
 * While opening: only a refused daemon's preflight or a person's sqlite3 shell can be on the file
 * (the lock file keeps other daemons out). Once open, 0: a busy wait would stall the event loop.
 * The only other connection is the checkpointer; its PASSIVE checkpoints take no lock a writer
 * waits for, except that a read racing a commit's wal-index header update takes the WAL write lock
 * for a few µs (measured: ~1 in 200,000 commits). The writer then gets SQLITE_BUSY at BEGIN and
 * group-commit.ts retries the batch on a later macrotask (stats.busyRetries).
 */
const OPEN_BUSY_TIMEOUT_MS = 100;
/** Page cache of the one connection, in KiB (negative PRAGMA value): keeps replays off the disk. */
export const CACHE_KIB = 32768;
/**
 * WAL pages before SQLite's automatic checkpoint, when checkpoints run inside commits (option
 * `checkpoint: false`, or the checkpointer worker failed; SQLite's default is 1000; 16000 pages =
 * 64 MiB). Appends from many sessions dirty at least one leaf page per session per commit; a longer
 * WAL lets one checkpoint write each page once for many commits. Measured on the bench: 1.4-2x the
 * events/s of 1000 pages, at the cost of a longer pause (~60 ms) in the commit that checkpoints.
 */
export const WAL_AUTOCHECKPOINT_PAGES = 16000;

export interface OpenOptions {
  synchronous?: "NORMAL" | "FULL";
  /** PRAGMA max_page_count for this connection: caps the file size. */
  maxPageCount?: number;
  /** PRAGMA wal_autocheckpoint (default 0: the checkpointer worker checkpoints). */
  walAutocheckpointPages?: number;
  /** PRAGMA journal_size_limit: the WAL file is truncated to this when it restarts (default: none). */
  walSizeLimitBytes?: number;
}

export interface OpenedDatabase {
  db: Database;
  /** The single-daemon lock; release it after closing `db`. */
  lock: StoreLock;
}

/** Locks, opens and migrates `path`; throws SparError `unavailable` with a message naming it. */
export function openDatabase(path: string, options: OpenOptions = {}): OpenedDatabase {
  const lock = StoreLock.acquire(path);
  try {
    preflight(path);
  } catch (error) {
    // Not ours: leave nothing beside it (every opener refuses this file, so the unlink races no one).
    lock.release({ removeCreated: true });
    throw error;
  }
  let db: Database;
  try {
    // Mode 0600 before SQLite opens it, so its -wal and -shm are 0600 from their creation too.
    tightenModes([path, `${path}-wal`, `${path}-shm`, `${path}-journal`]);
    createPrivateFile(path);
    db = new Database(path, { create: true, strict: true });
  } catch (error) {
    lock.release();
    throw openFailure(path, error);
  }
  try {
    configure(db, path, options);
    return { db, lock };
  } catch (error) {
    db.close(false);
    lock.release();
    throw openFailure(path, error);
  }
}

function configure(db: Database, path: string, options: OpenOptions): void {
  db.exec(`PRAGMA busy_timeout = ${OPEN_BUSY_TIMEOUT_MS}`);
  const owner = ownership(db);
  if (owner === "foreign") throw notOursError(path, FOREIGN);
  if (owner === "empty") db.exec(`PRAGMA application_id = ${SPAR_APPLICATION_ID}`);
  const mode = db.query<{ journal_mode: string }, []>("PRAGMA journal_mode = WAL").get();
  if (mode?.journal_mode.toLowerCase() !== "wal") {
    throw new SparError("unavailable", `session store ${path} could not switch to WAL (got ${mode?.journal_mode})`);
  }
  db.exec(`PRAGMA synchronous = ${options.synchronous === "FULL" ? "FULL" : "NORMAL"}`);
  // Deleted rows and freed pages are overwritten with zeros (not FAST: that leaves freelist pages,
  // and a deleted session's event blocks are overflow pages that go to the freelist).
  db.exec("PRAGMA secure_delete = ON");
  db.exec(`PRAGMA cache_size = -${CACHE_KIB}`);
  db.exec(`PRAGMA wal_autocheckpoint = ${Math.max(0, Math.floor(options.walAutocheckpointPages ?? 0))}`);
  db.exec(`PRAGMA journal_size_limit = ${Math.floor(options.walSizeLimitBytes ?? -1)}`);
  migrate(db, path);
  if (options.maxPageCount !== undefined) {
    db.exec(`PRAGMA max_page_count = ${Math.max(1, Math.floor(options.maxPageCount))}`);
  }
  db.exec("PRAGMA busy_timeout = 0");
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
