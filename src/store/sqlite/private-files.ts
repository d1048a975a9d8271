/**
 * File modes of a sqlite store: its files hold every session's text, so only the daemon's user may
 * read them. SQLite creates `-wal`, `-shm` and `-journal` with the mode of the database file
 * (os_unix.c: findCreateFileMode, unixOpenSharedMemory), so creating the database and lock files
 * 0600 before SQLite opens them leaves no moment in which any of them is readable by others, with
 * no process-wide umask change (tools and their children keep the operator's umask). Files an
 * older version left readable by group or others are tightened at open.
 *
 * Never opens a file that exists: closing any descriptor of a file drops every fcntl lock this
 * process holds on it (lock-file.ts). Creation uses O_EXCL, and an existing file is only chmod-ed.
 */
import { chmodSync, closeSync, openSync, statSync } from "node:fs";

export const PRIVATE_FILE_MODE = 0o600;
/** Group and others: no bit of these may stay on a store file. */
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
