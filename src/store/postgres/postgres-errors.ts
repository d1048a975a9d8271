/**
 * Translation of Bun.sql PostgreSQL failures into SparError for the postgres store. Owns the rule
 * of how a failure is met (D500):
 * - `connection`: the connection, not the statement, failed (lost, refused, the server shutting
 *   down or starting, out of connection slots). Nothing before COMMIT survives it, so the work may
 *   run again on a fresh connection; at COMMIT the outcome is unknown (the commit is in doubt).
 * - `refused`: the server answered and refuses writes as a whole (read-only, out of disk space or
 *   memory, a system error, the login or the database gone). Every op of the batch fails
 *   `unavailable`, with a message naming the reason; a retry now would fail the same way.
 * - `retry`: another transaction won a race (deadlock, serialization failure); retrying may succeed.
 * - `statement`: this statement failed; only the op that ran it fails (`internal`).
 * Pure: never touches a database.
 */
import { SparError } from "../../core/errors.ts";
import { redactUrl } from "../../net/redact-url.ts";
import { engineFailures, errorMessage } from "../store-rules.ts";
import { describeConnectFailure, isTlsFailure } from "./postgres-connection.ts";

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

export type FailureKind = "connection" | "refused" | "retry" | "statement";

/**
 * SQLSTATEs that end or refuse the connection itself: 57P01 admin shutdown (a fast stop, a
 * terminated backend), 57P02 crash shutdown, 57P03 cannot connect now (starting up or shutting
 * down), 53300 too many connections (no slot: nothing ran).
 */
const CONNECTION_STATES = new Set(["57P01", "57P02", "57P03", "53300"]);

/**
 * What the server refuses as a whole, with the reason a message names: a read-only database or
 * standby, out of disk space or memory, and the classes that refuse everything (53 insufficient
 * resources, 57 operator intervention, 58 system error, 28 authorization, 3D no such database).
 */
const REFUSED_STATES: Record<string, string> = {
  "25006": "the database is read-only",
  "53100": "the database server is out of disk space",
  "53200": "the database server is out of memory",
};
const REFUSED_CLASSES = new Set(["53", "57", "58", "28", "3D"]);

/** How the store meets `error` (see the module header). */
export function failureKind(error: unknown): FailureKind {
  const state = sqlState(error);
  if (state === undefined) {
    // No SQLSTATE: Bun's own connection and protocol failures (ERR_POSTGRES_CONNECTION_CLOSED, ...).
    const code = bunCode(error);
    return code?.startsWith("ERR_POSTGRES_") === true && code !== "ERR_POSTGRES_SERVER_ERROR"
      ? "connection"
      : "statement";
  }
  if (state.startsWith("08") || CONNECTION_STATES.has(state)) return "connection";
  if (state in REFUSED_STATES || REFUSED_CLASSES.has(state.slice(0, 2))) return "refused";
  if (state === "40P01" || state === "40001") return "retry";
  return "statement";
}

/** The store as a whole failed (a connection failure or a refusal): every op of the batch fails. */
export function isStoreLevel(error: unknown): boolean {
  const kind = failureKind(error);
  return kind === "connection" || kind === "refused";
}

/** The connection failed: work not yet committed may run again on a fresh one. */
export function isConnectionLevel(error: unknown): boolean {
  return failureKind(error) === "connection";
}

/** Deadlock detected, serialization failure: another daemon's transaction won; retrying may succeed. */
export function isRetryable(error: unknown): boolean {
  return failureKind(error) === "retry";
}

function details(error: unknown): Record<string, unknown> {
  return { sqlstate: sqlState(error) ?? null };
}

/** The server's message, led by the reason a known refusal has (`the database is read-only: ...`). */
function reasoned(error: unknown): string {
  const state = sqlState(error);
  const reason = state === undefined ? undefined : REFUSED_STATES[state];
  const message = errorMessage(error);
  return reason === undefined ? message : `${reason} (SQLSTATE ${state}: ${message})`;
}

const failures = engineFailures(details);
export const { readFailed, opFailed } = failures;

/** Every op of a batch fails with this when the store refused it: 503, naming the reason. */
export function writeRefused(error: unknown): SparError {
  if (error instanceof SparError) return error;
  return new SparError("unavailable", `session store refused the write: ${reasoned(error)}`, details(error));
}

/**
 * A batch whose COMMIT failed at the connection level and whose outcome the server did not tell
 * in time (D501): it may or may not have committed.
 */
export function commitInDoubt(error: unknown, xid: string, waitedMs: number): SparError {
  return new SparError(
    "unavailable",
    `session store commit in doubt: the connection failed at COMMIT (${errorMessage(error)}) and the server did not say within ${Math.round(waitedMs / 1000)} s whether transaction ${xid} committed; the write may have been applied`,
    { ...details(error), in_doubt: true },
  );
}

/** The open failed: the URL without its password, and why (a TLS failure named as one, D517). */
export function openFailed(where: string, error: unknown): SparError {
  if (error instanceof SparError) return error;
  return new SparError(
    "unavailable",
    `cannot open session store ${where}: ${isTlsFailure(error) ? describeConnectFailure(where, error) : reasoned(error)}`,
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
