/**
 * Owner-only files for the watcher's state (issue 13 item 4): every directory the watcher creates
 * for its files is 0700 and every file it writes is 0600 (the dedup file, the occurrence store with
 * its `-wal` and `-shm`, the pending-inject journal). A file that already exists with wider bits
 * (written by an earlier release) is narrowed when the watcher opens it; existing directories are
 * left as the operator made them.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";

export const PRIVATE_DIRECTORY_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Creates the file's directory (and missing parents) owner-only. */
export function ensurePrivateDirectoryFor(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
}

/** Creates `path` empty with mode 0600 if missing, else narrows its mode to 0600. */
export function ensurePrivateFile(path: string): void {
  ensurePrivateDirectoryFor(path);
  if (existsSync(path)) chmodSync(path, PRIVATE_FILE_MODE);
  else closeSync(openSync(path, "a", PRIVATE_FILE_MODE));
  // The umask may have taken bits away, never added them; set exactly 0600 either way.
  chmodSync(path, PRIVATE_FILE_MODE);
}

/** A SQLite file and its companions: SQLite gives a new `-wal`/`-shm` the main file's mode. */
export function ensurePrivateSqliteFile(path: string): void {
  ensurePrivateFile(path);
  for (const companion of [`${path}-wal`, `${path}-shm`, `${path}-journal`])
    if (existsSync(companion)) chmodSync(companion, PRIVATE_FILE_MODE);
}
