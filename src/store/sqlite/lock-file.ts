/**
 * The single-daemon lock of a sqlite session store (D18): an OS lock on the sidecar file
 * `<store>.lock`, a tiny SQLite database opened in locking_mode=EXCLUSIVE whose write lock is taken
 * at once and held until release. Being an OS (fcntl) lock it dies with the process, kill -9
 * included, so a lock file left behind by a crash never blocks a restart: what counts is the lock,
 * not the file. The store file itself is then opened with normal locking, so a second connection
 * (the WAL checkpointer, checkpointer.ts) can work beside the writer.
 *
 * The lock file is created once and never deleted: unlinking it would let a daemon that opened the
 * old file lock that orphan while another creates and locks a new one, two daemons on one store.
 * The one exception is `release({ removeCreated: true })` after a refused open of a file that is
 * not ours, where every opener refuses anyway. Its content is an empty database, written only when
 * it is created (mode 0600, private-files.ts); journal_mode=MEMORY keeps a `-journal` file from
 * appearing beside it.
 *
 * Never open the lock file (or the store's files) through node:fs while a connection holds it:
 * closing any descriptor of a file drops every fcntl lock this process holds on it.
 */
import { Database } from "bun:sqlite";
import { existsSync, unlinkSync } from "node:fs";
import { SparError } from "../../core/errors.ts";
import { createPrivateFile, tightenModes } from "../../fs/private-files.ts";
import { errorMessage } from "../store-rules.ts";
import { inUseError, isBusy, sqliteCode } from "./sqlite-errors.ts";

/** A second daemon is refused after this wait (a daemon that is just exiting gets this much grace). */
const LOCK_BUSY_TIMEOUT_MS = 100;

export function lockPathOf(storePath: string): string {
  return `${storePath}.lock`;
}

export class StoreLock {
  private db: Database | undefined;

  private constructor(
    db: Database,
    readonly path: string,
    /** This acquire created the file (it did not exist before). */
    private readonly created: boolean,
  ) {
    this.db = db;
  }

  /**
   * Takes the lock of the store at `storePath`, creating `<storePath>.lock` if needed. Throws
   * SparError `unavailable`: in use by another daemon, a lock file that is not SQLite, or the file
   * cannot be created (the message names the store path).
   */
  static acquire(storePath: string): StoreLock {
    const path = lockPathOf(storePath);
    const existed = existsSync(path);
    let db: Database;
    try {
      // 0600 from its creation (private-files.ts); one an older version made readable is tightened.
      if (existed) tightenModes([path]);
      else createPrivateFile(path);
      db = new Database(path, { create: true, strict: true });
    } catch (error) {
      throw lockFailure(storePath, path, error);
    }
    try {
      db.exec(`PRAGMA busy_timeout = ${LOCK_BUSY_TIMEOUT_MS}`);
      db.exec("PRAGMA locking_mode = EXCLUSIVE");
      db.exec("PRAGMA journal_mode = MEMORY");
      // An exclusive transaction takes the write lock; in exclusive locking mode it outlives COMMIT.
      db.exec("BEGIN EXCLUSIVE");
      db.exec("COMMIT");
    } catch (error) {
      db.close(false);
      throw lockFailure(storePath, path, error);
    }
    return new StoreLock(db, path, !existed);
  }

  get held(): boolean {
    return this.db !== undefined;
  }

  /** Releases the lock (idempotent). `removeCreated`: also delete the file if this acquire created it. */
  release(options: { removeCreated?: boolean } = {}): void {
    const db = this.db;
    if (db === undefined) return;
    this.db = undefined;
    if (options.removeCreated === true && this.created) {
      try {
        unlinkSync(this.path);
      } catch {
        // Already gone, or not ours to remove: leaving it is harmless.
      }
    }
    db.close(false);
  }
}

function lockFailure(storePath: string, lockPath: string, error: unknown): SparError {
  if (isBusy(error)) return inUseError(storePath);
  const code = sqliteCode(error);
  if (code?.startsWith("SQLITE_NOTADB") || code?.startsWith("SQLITE_CORRUPT")) {
    return new SparError(
      "unavailable",
      `cannot open session store ${storePath}: its lock file ${lockPath} is not a SQLite file (${errorMessage(error)}); remove it if no spar daemon uses this store`,
      { sqlite_code: code },
    );
  }
  return new SparError("unavailable", `cannot open session store ${storePath}: ${lockPath}: ${errorMessage(error)}`, {
    sqlite_code: code ?? null,
  });
}
