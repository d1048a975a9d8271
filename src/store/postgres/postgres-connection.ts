/**
 * How the postgres store connects: the Bun.sql constructor's options (pool size, timeouts), the
 * check of a URL's TLS parameters before anything connects, and the words a TLS failure is named
 * with. Bun.sql (1.4.5) honours libpq's `sslmode` (disable, allow, prefer, require, verify-ca,
 * verify-full), `sslrootcert`, `sslcert` and `sslkey` in the URL, and PGPASSWORD, PGUSER and
 * PGSSLMODE from the environment, so the URL and the environment are the one place a deployment
 * says how to reach its database (D516, D518): the options here never carry a `tls` of their own,
 * which would override the URL's mode. Pure: it opens nothing.
 */
import { errorMessage } from "../store-rules.ts";

/** The SSL modes libpq and Bun.sql both know. */
export const SSL_MODES = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] as const;

/**
 * Connections in a daemon's pool: the default and the bounds of `--session-db-pool` (D515). The
 * writer has one of its own (D502) and the liveness mark (D490) or, for a store opened alone, the
 * writer lock
 * holds another from open to close, so fewer than three would leave none for reads (the daemon
 * would hang at startup): three is the least.
 */
export const POOL_DEFAULT = 10;
export const POOL_MIN = 3;
export const POOL_MAX = 100;

export interface ConnectionSettings {
  maxConnections: number;
  connectTimeoutSeconds: number;
}

/** The Bun.sql options of a store's pool; no `tls`: the URL's sslmode rules (D516). */
export function sqlOptions(settings: ConnectionSettings): {
  max: number;
  connectionTimeout: number;
  idleTimeout: number;
} {
  return { max: settings.maxConnections, connectionTimeout: settings.connectTimeoutSeconds, idleTimeout: 60 };
}

/**
 * A postgres:// URL's TLS parameters checked before a connection is tried: `sslmode` one of
 * SSL_MODES, `sslcert` and `sslkey` given together, and none of them empty. The answer names the
 * parameter (never the URL: it may carry a password); undefined when they are fine.
 */
export function tlsParameterProblem(url: string): string | undefined {
  if (!URL.canParse(url)) return undefined;
  const query = new URL(url).searchParams;
  for (const name of ["sslmode", "sslrootcert", "sslcert", "sslkey"])
    if (query.get(name) === "") return `${name}= is empty: give a value or leave the parameter out`;
  const mode = query.get("sslmode");
  if (mode !== null && !(SSL_MODES as readonly string[]).includes(mode))
    return `sslmode=${JSON.stringify(mode).slice(1, -1)} is not a TLS mode: use one of ${SSL_MODES.join(", ")}`;
  if (query.has("sslcert") !== query.has("sslkey"))
    return "sslcert and sslkey go together: a client certificate needs its key";
  return undefined;
}

/** Bun's and the server's codes and messages of a failure the TLS handshake or its absence caused. */
const TLS_CODES = /^(ERR_TLS_|ERR_SSL_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|CERT_|ERR_POSTGRES_TLS)/;
const TLS_MESSAGES = /certificate|no encryption|\bSSL\b|\bTLS\b|caFile/i;

/** Whether a connect failure is the TLS handshake's (or the server's refusal of a connection without TLS). */
export function isTlsFailure(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string" && TLS_CODES.test(code)) return true;
  return TLS_MESSAGES.test(errorMessage(error));
}

/**
 * A connect failure as an operator reads it (D517): a TLS one names TLS and the URL's sslmode
 * with what to check; any other is the driver's message as it is. `url` may be the redacted one.
 */
export function describeConnectFailure(url: string, error: unknown): string {
  const message = errorMessage(error);
  if (!isTlsFailure(error)) return message;
  const mode = URL.canParse(url) ? (new URL(url).searchParams.get("sslmode") ?? undefined) : undefined;
  const shown = mode === undefined ? "no sslmode in the URL" : `sslmode=${mode}`;
  return `TLS failed (${shown}): ${message}; check the server's certificate against sslrootcert, and whether the server requires TLS`;
}
