/**
 * Files only the daemon's user may read, one module for every writer of them (the stores, the
 * watcher's state, the decision export). Files are created 0600 with O_EXCL, never through an
 * open of a file that exists (closing any descriptor of a sqlite file drops this process's fcntl
 * locks on it, lock-file.ts); an existing file an older release left readable by group or others
 * is narrowed. SQLite creates its `-wal`, `-shm` and `-journal` with the database file's mode, so
 * a database created 0600 before SQLite opens it has no moment readable by others, with no
 * process-wide umask change (tools and their children keep the operator's umask). Directories
 * the watcher creates for its files are 0700; existing ones stay as the operator made them.
 */
import {
  chmodSync,
  closeSync,
  fchmodSync,
  fsyncSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";

export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_DIRECTORY_MODE = 0o700;
/** Group and others: no bit of these may stay on a private file. */
const SHARED_BITS = 0o077;

/** Creates `path` empty with mode 0600 unless it exists (then leaves it as it is). */
export function createPrivateFile(path: string): void {
  try {
    closeSync(openSync(path, "wx", PRIVATE_FILE_MODE));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
}

/** Drops group and other permission bits from each of `paths` that exists. */
export function tightenModes(paths: readonly string[]): void {
  for (const path of paths) {
    const stat = statSync(path, { throwIfNoEntry: false });
    if (stat?.isFile() && (stat.mode & SHARED_BITS) !== 0) chmodSync(path, stat.mode & 0o700);
  }
}

/** Creates the file's directory (and missing parents) owner-only. */
export function ensurePrivateDirectoryFor(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
}

/** `path` in an owner-only directory, created 0600 if missing, else narrowed to owner-only. */
export function ensurePrivateFile(path: string): void {
  ensurePrivateDirectoryFor(path);
  createPrivateFile(path);
  tightenModes([path]);
}

/** A SQLite file and its companions, owner-only (SQLite gives a new `-wal`/`-shm` the main file's mode). */
export function ensurePrivateSqliteFile(path: string): void {
  ensurePrivateFile(path);
  tightenModes([`${path}-wal`, `${path}-shm`, `${path}-journal`]);
}

/**
 * Writes `text` to `path` readable by its owner only: into a new file created 0600 with O_EXCL
 * beside the target, flushed, then renamed over it, so the target never exists with wider bits
 * (whatever the umask or an earlier file's mode) and a symlink at the target is replaced, never
 * written through.
 */
export function writePrivateFile(path: string, text: string): void {
  const temporary = join(dirname(path), `.${basename(path)}.${process.pid}.${Date.now()}.tmp`);
  const descriptor = openSync(temporary, "wx", PRIVATE_FILE_MODE);
  try {
    fchmodSync(descriptor, PRIVATE_FILE_MODE);
    writeSync(descriptor, text);
    fsyncSync(descriptor);
  } catch (error) {
    closeSync(descriptor);
    rmSync(temporary, { force: true });
    throw error;
  }
  closeSync(descriptor);
  try {
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}
