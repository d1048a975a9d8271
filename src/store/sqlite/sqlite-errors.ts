/**
 * Translation of bun:sqlite failures into SparError for the sqlite store. Owns the rule of which
 * SQLite result codes mean "the store as a whole refused" (every op of a batch fails with
 * `unavailable`) versus "this one statement failed" (only the op that ran it fails); the texts
 * are both stores' (store-rules.ts), with the SQLite code as `sqlite_code`.
 * Pure: never touches a database.
 */
import { SparError } from "../../core/errors.ts";
import { engineFailures, errorMessage } from "../store-rules.ts";

/** The extended SQLite code name of an error (`SQLITE_BUSY`, `SQLITE_IOERR_WRITE`, ...), if any. */
export function sqliteCode(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && code.startsWith("SQLITE_") ? code : undefined;
}

/** Primary codes that say the file or the connection refused, not one statement's data. */
const STORE_LEVEL = new Set([
  "SQLITE_FULL",
  "SQLITE_READONLY",
  "SQLITE_IOERR",
  "SQLITE_CORRUPT",
  "SQLITE_NOTADB",
  "SQLITE_CANTOPEN",
  "SQLITE_BUSY",
  "SQLITE_LOCKED",
  "SQLITE_NOMEM",
  "SQLITE_PROTOCOL",
  "SQLITE_PERM",
  "SQLITE_AUTH",
  "SQLITE_NOLFS",
]);

export function isStoreLevel(error: unknown): boolean {
  const code = sqliteCode(error);
  if (code === undefined) return false;
  const primary = code.split("_", 2).join("_");
  return STORE_LEVEL.has(primary);
}

export function isBusy(error: unknown): boolean {
  const code = sqliteCode(error);
  return code?.startsWith("SQLITE_BUSY") || /database is locked/i.test(errorMessage(error));
}

export function inUseError(path: string): SparError {
  return new SparError(
    "unavailable",
    `session store ${path} is in use by another spar daemon (one daemon per sqlite file); stop it or choose another --session-db`,
  );
}

export function notOursError(path: string, why: string): SparError {
  return new SparError("unavailable", `${path} is not a spar session store (${why}); refusing to open it`);
}

export const { writeRefused, readFailed, opFailed } = engineFailures((error) => ({
  sqlite_code: sqliteCode(error) ?? null,
}));
