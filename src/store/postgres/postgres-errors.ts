/**
 * Translation of Bun.sql PostgreSQL failures into SparError for the postgres store. Owns the rule
 * of which failures mean "the store as a whole refused" (connection lost, server out of space or
 * shutting down, read-only: every op of a batch fails with `unavailable`) versus "this statement
 * failed" (only the op that ran it fails, `internal`), and which are worth a retry (deadlock,
 * serialization failure). Pure: never touches a database.
 */
import { SparError } from "../../core/errors.ts";
import { redactUrl } from "../../net/redact-url.ts";
import { engineFailures } from "../store-rules.ts";
import { describeConnectFailure } from "./postgres-connection.ts";

/** Bun's error code (`ERR_POSTGRES_...`) of a failure, if any. */
function bunCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/** The server's SQLSTATE of a failure, if the server answered one. */
export function sqlState(error: unknown): string | undefined {
  const errno = (error as { errno?: unknown } | null)?.errno;
  return typeof errno === "string" && /^[0-9A-Z]{5}$/.test(errno) ? errno : undefined;
}

/**
 * SQLSTATE classes that say the server or the connection refused: 08 connection, 53 insufficient
 * resources (disk full), 57 operator intervention (shutdown), 58 system error, 28 authorization;
 * and 25006 read-only transaction (a standby).
 */
const STORE_LEVEL_CLASSES = new Set(["08", "53", "57", "58", "28", "3D"]);

export function isStoreLevel(error: unknown): boolean {
  const state = sqlState(error);
  if (state !== undefined) return STORE_LEVEL_CLASSES.has(state.slice(0, 2)) || state === "25006";
  // No SQLSTATE: Bun's own connection and protocol failures.
  return bunCode(error)?.startsWith("ERR_POSTGRES_") === true && bunCode(error) !== "ERR_POSTGRES_SERVER_ERROR";
}

/** Deadlock detected, serialization failure: another daemon's transaction won; retrying may succeed. */
export function isRetryable(error: unknown): boolean {
  const state = sqlState(error);
  return state === "40P01" || state === "40001";
}

function details(error: unknown): Record<string, unknown> {
  return { sqlstate: sqlState(error) ?? null };
}

export const { writeRefused, readFailed, opFailed } = engineFailures(details);

/** The open failed: the URL without its password, and why (a TLS failure named as one, D517). */
export function openFailed(where: string, error: unknown): SparError {
  if (error instanceof SparError) return error;
  return new SparError(
    "unavailable",
    `cannot open session store ${where}: ${describeConnectFailure(where, error)}`,
    details(error),
  );
}

/** Whether a store location is a postgres URL (`postgres://` or `postgresql://`): the one test, the flags' too. */
export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

/** The URL as messages name it (its password as `***`); refuses one that is not postgres://. */
export function postgresWhere(url: string): string {
  const where = redactUrl(url);
  if (!isPostgresUrl(url))
    throw new SparError("unavailable", `${where} is not a postgres:// URL; the postgres store needs one`);
  return where;
}
