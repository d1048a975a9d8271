/**
 * The per-caller layer: who is calling. Anonymous single-user mode maps every request to one
 * fixed caller. With a bearer-token table (multi-session auth) `Authorization: Bearer <token>`
 * names the caller, `admin_identities` mark admins, and callers in `proxy_identities` may assert
 * another identity with `X-Asserted-Caller` (header name configurable), the proxy kept for
 * audit. Failures answer 401 with `WWW-Authenticate: Bearer realm="attach-multisession"`.
 */
import { createHash } from "node:crypto";
import { HttpProblem } from "./http-problem.ts";
import { credentialIdentity } from "./reserved-identities.ts";

export type CallerSource = "bearer" | "mtls" | "iap" | "asserted" | "anonymous";

export interface Caller {
  identity: string;
  admin: boolean;
  source: CallerSource;
  /** The proxy that asserted this caller (source `asserted`). */
  proxyBy?: string;
  /** The scopes its credential grants (protocol listeners, protocol-bearer.ts); none when absent. */
  scopes?: readonly string[];
}

export interface CallerAuthConfig {
  /** sha256 hex of a token -> identity; undefined: anonymous single-user mode. */
  tokens: ReadonlyMap<string, string> | undefined;
  adminIdentities: ReadonlySet<string>;
  proxyIdentities: ReadonlySet<string>;
  /** Identities a proxy may assert; empty: any identity that is not an admin's. */
  assertableIdentities: ReadonlySet<string>;
  /** Whether a proxy may assert an admin identity (off: an assertion never yields an admin). */
  proxyMayAssertAdmins: boolean;
  allowAnonymous: boolean;
  /** Lower-case header name of proxy assertions. */
  proxyHeader: string;
}

/** The one fixed caller of single-user mode (D4). */
export const LOCAL_CALLER: Caller = Object.freeze({ identity: "local", admin: false, source: "anonymous" });
const ANONYMOUS: Caller = Object.freeze({ identity: "anonymous", admin: false, source: "anonymous" });

export function sha256Hex(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}

function refuse(message: string): HttpProblem {
  return new HttpProblem("unauthorized", message, { "www-authenticate": 'Bearer realm="attach-multisession"' });
}

function bearerOf(request: Request): string | undefined {
  const authorization = request.headers.get("authorization");
  const match = authorization ? /^Bearer\s+(.+)$/i.exec(authorization.trim()) : null;
  return match?.[1];
}

/**
 * Resolve the caller of a request. `transportBearer` is the shared transport token when the
 * request presented it in `Authorization` (then that header names no caller).
 */
export function resolveCaller(
  request: Request,
  config: CallerAuthConfig,
  transportToken: string | undefined,
  peer?: string,
): Caller {
  const certified: Caller | undefined =
    peer === undefined
      ? undefined
      : {
          identity: credentialIdentity(peer, "the client certificate's subject", refuse),
          admin: config.adminIdentities.has(peer),
          source: "mtls",
        };
  if (config.tokens === undefined) return certified ? withAssertion(request, config, certified) : LOCAL_CALLER;
  const presented = bearerOf(request);
  const usesTransportToken =
    presented !== undefined && transportToken !== undefined && request.headers.get("x-attach-token") === null;
  let caller: Caller;
  if ((presented === undefined || usesTransportToken) && certified) {
    caller = certified;
  } else if (presented === undefined || usesTransportToken) {
    if (!config.allowAnonymous)
      throw refuse("this daemon needs an authenticated caller: send Authorization: Bearer <your token>");
    caller = ANONYMOUS;
  } else {
    const identity = config.tokens.get(sha256Hex(presented));
    if (identity === undefined) throw refuse("unknown caller token");
    caller = { identity, admin: config.adminIdentities.has(identity), source: "bearer" };
  }
  return withAssertion(request, config, caller);
}

/**
 * Apply a proxy assertion: only a bearer- or certificate-identified proxy may make one, only for
 * an identity in `assertable_identities` when that list is set, and never for an admin identity
 * unless `proxy_may_assert_admins` (a proxy's own credentials must not be an admin's).
 */
function withAssertion(request: Request, config: CallerAuthConfig, caller: Caller): Caller {
  const asserted = request.headers.get(config.proxyHeader);
  if (asserted === null || config.tokens === undefined) return caller;
  if ((caller.source !== "bearer" && caller.source !== "mtls") || !config.proxyIdentities.has(caller.identity)) {
    throw refuse(`${config.proxyHeader} is accepted only from a proxy identity`);
  }
  const identity = asserted.trim();
  if (identity === "") throw refuse(`${config.proxyHeader} is empty`);
  credentialIdentity(identity, config.proxyHeader, refuse);
  const admin = config.adminIdentities.has(identity);
  if (admin && !config.proxyMayAssertAdmins) {
    throw refuse(
      `${config.proxyHeader}: ${JSON.stringify(identity)} is an admin identity, which a proxy may not assert (attach.multi_session.auth.proxy_may_assert_admins)`,
    );
  }
  if (config.assertableIdentities.size > 0 && !config.assertableIdentities.has(identity)) {
    throw refuse(
      `${config.proxyHeader}: ${JSON.stringify(identity.slice(0, 256))} is not an identity proxies may assert (attach.multi_session.auth.assertable_identities)`,
    );
  }
  return { identity, admin, source: "asserted", proxyBy: caller.identity };
}

/**
 * Whether a caller may act as an identity (create sessions, register peers): everyone but the
 * anonymous guest of multi-session auth with `allow_anonymous`. The single-user local caller may.
 */
export function isIdentified(caller: Caller): boolean {
  return caller !== ANONYMOUS;
}
