/**
 * The one rule for where a daemon's session store lives, shared by `spar agent` and `spar svc`:
 * the postgres driver needs a postgres:// URL, and a postgres URL under the sqlite driver is a
 * mistake named as such (rather than a sqlite file called "postgres:"); a postgres URL's TLS
 * parameters are checked here (D516), and `--session-db-pool` is refused under sqlite (D515).
 * Pure: it opens nothing.
 */
import { type Result, err, ok } from "../core/result.ts";
import { tlsParameterProblem } from "../store/postgres/postgres-connection.ts";
import { isPostgresUrl } from "../store/postgres/postgres-errors.ts";

export type SessionStoreDriver = "sqlite" | "postgres";

/**
 * Checks a non-empty `--session-db` value against the driver; `from` names where it was set (the
 * flag or config key). The error never repeats the value: a URL may carry a password.
 */
export function checkStoreLocation(driver: SessionStoreDriver, location: string, from: string): Result<string> {
  if (driver === "postgres") {
    if (!isPostgresUrl(location))
      return err(
        `${from} under --session-db-driver=postgres must be a postgres:// URL (postgres://user:password@host:5432/database)`,
      );
    const tls = tlsParameterProblem(location);
    if (tls !== undefined) return err(`${from}: ${tls}`);
    return ok(location);
  }
  if (isPostgresUrl(location))
    return err(`${from} is a postgres URL but the driver is sqlite: add --session-db-driver=postgres`);
  return ok(location);
}

/**
 * `--session-db-pool` sizes the postgres store's pool; a sqlite store has no pool, so setting it
 * there is refused rather than ignored (D515, as D484 refuses a sqlite cap under postgres).
 * `poolFrom`: where it was set, undefined when it was not.
 */
export function checkStorePool(driver: SessionStoreDriver, poolFrom: string | undefined): Result<void> {
  if (driver === "sqlite" && poolFrom !== undefined)
    return err(
      `${poolFrom} sizes the postgres store's connection pool and does not apply under --session-db-driver=sqlite`,
    );
  return ok(undefined);
}

/** The bounds of `--session-db-lease` (D487): a second at least, ten minutes at most. */
export const LEASE_BOUNDS_MS = { min: 1_000, max: 600_000 } as const;

/** A lease duration checked against LEASE_BOUNDS_MS, the message naming where it came from. */
export function checkStoreLease(leaseMs: number, from: string): Result<number> {
  if (leaseMs < LEASE_BOUNDS_MS.min || leaseMs > LEASE_BOUNDS_MS.max)
    return err(`${from} must be between 1s and 10m (got ${leaseMs} ms)`);
  return ok(leaseMs);
}
