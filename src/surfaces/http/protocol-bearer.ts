/**
 * The bearer of svc's protocol listeners (A2A `SVC_A2A_TOKEN`, AG-UI `SVC_AGUI_TOKEN`;
 * docs/svc-a2a.md#tokens-who-is-calling-and-with-which-scopes, docs/svc-agui.md#tokens). The
 * variable holds a shared secret, accepted two ways:
 * - the secret itself as the bearer: the caller is the listener's fixed identity (`svc-a2a`,
 *   `svc-agui`) and holds no scopes;
 * - a JWT signed with the secret (HS256 only; `alg: none` and every other algorithm refused):
 *   the caller is its `tenant` claim, else its `sub`; its scopes are the `scope` claim (space
 *   separated, OAuth 2.0) or the `scp` array; `exp` is required, numeric and at most a day
 *   ahead, `nbf` checked when present (30 s leeway, D329); a tenant or subject the daemon itself
 *   uses is refused (reserved-identities.ts, D328).
 * Anything else is a 401 with `WWW-Authenticate: Bearer realm="<label>"`. A listener without a
 * secret (loopback only, svc-config.ts) serves everyone as the anonymous local caller, with no
 * scopes. Which scopes a workload needs is the listener's check (`missingScopes`), a 403.
 * Synchronous and pure but for the clock: it runs in the auth guard before routing.
 */
import { createHmac } from "node:crypto";
import { type Caller, LOCAL_CALLER } from "./caller-auth.ts";
import { HttpProblem } from "./http-problem.ts";
import { tokensMatch } from "./request-guards.ts";
import { credentialIdentity } from "./reserved-identities.ts";

export interface ProtocolBearerPolicy {
  /** The shared secret; undefined: no authentication (loopback binds only). */
  secret: string | undefined;
  /** Realm and message label: `a2a` or `agui`. */
  label: string;
  /** The identity of a caller presenting the secret itself. */
  identity: string;
  now?: () => number;
}

/** Seconds a token's `exp` / `nbf` may be off by. */
const CLOCK_LEEWAY_SECONDS = 30;
/** The longest a token may still have to live: a day (D329). */
const MAX_LIFETIME_SECONDS = 24 * 60 * 60;

/** The caller behind a request's `Authorization: Bearer`; throws the 401. */
export function protocolCaller(request: Request, policy: ProtocolBearerPolicy): Caller {
  if (policy.secret === undefined) return LOCAL_CALLER;
  const authorization = request.headers.get("authorization");
  const match = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization.trim()) : null;
  const presented = match?.[1];
  if (presented === undefined) throw unauthorized(policy, `missing ${policy.label} bearer token`);
  if (tokensMatch(presented, policy.secret))
    return Object.freeze({ identity: policy.identity, admin: false, source: "bearer", scopes: [] });
  const claims = verifiedClaims(presented, policy);
  const tenant = stringClaim(claims.tenant);
  const identity = tenant ?? stringClaim(claims.sub);
  if (identity === undefined) throw unauthorized(policy, "the token names no tenant and no subject");
  credentialIdentity(
    identity,
    `the ${policy.label} token's ${tenant === undefined ? "sub" : "tenant"} claim`,
    (message) => unauthorized(policy, message),
  );
  return Object.freeze({ identity, admin: false, source: "bearer", scopes: scopesOf(claims) });
}

/** The scopes of `required` the caller lacks (empty: allowed). */
export function missingScopes(caller: Caller, required: readonly string[]): string[] {
  const held = new Set(caller.scopes ?? []);
  return required.filter((scope) => !held.has(scope));
}

function verifiedClaims(token: string, policy: ProtocolBearerPolicy): Record<string, unknown> {
  const parts = token.split(".");
  if (parts.length !== 3) throw unauthorized(policy, `wrong ${policy.label} token`);
  const [header, payload, signature] = parts as [string, string, string];
  const head = decodeJson(header);
  if (head?.alg !== "HS256") throw unauthorized(policy, `wrong ${policy.label} token`);
  const expected = createHmac("sha256", policy.secret ?? "")
    .update(`${header}.${payload}`)
    .digest("base64url");
  if (!tokensMatch(signature, expected)) throw unauthorized(policy, `wrong ${policy.label} token`);
  const claims = decodeJson(payload);
  if (claims === undefined) throw unauthorized(policy, `wrong ${policy.label} token`);
  checkLifetime(claims, policy);
  return claims;
}

/**
 * The token's time claims (RFC 7519 NumericDates: finite numbers of seconds): `exp` is required
 * and at most MAX_LIFETIME_SECONDS ahead, `nbf` and `iat` are optional; a claim of another type
 * (a string, null) is refused, never read as absent (D329).
 */
function checkLifetime(claims: Record<string, unknown>, policy: ProtocolBearerPolicy): void {
  const label = policy.label;
  for (const name of ["exp", "nbf", "iat"] as const) {
    const value = claims[name];
    if (value !== undefined && (typeof value !== "number" || !Number.isFinite(value)))
      throw unauthorized(policy, `the ${label} token's ${name} must be a number of seconds (a NumericDate)`);
  }
  const { exp, nbf } = claims as { exp?: number; nbf?: number };
  if (exp === undefined) throw unauthorized(policy, `the ${label} token has no exp: tokens must expire`);
  const now = Math.floor((policy.now?.() ?? Date.now()) / 1000);
  if (now > exp + CLOCK_LEEWAY_SECONDS) throw unauthorized(policy, `the ${label} token expired`);
  if (exp - now > MAX_LIFETIME_SECONDS + CLOCK_LEEWAY_SECONDS)
    throw unauthorized(policy, `the ${label} token's exp is more than 24 h ahead: mint tokens that live at most a day`);
  if (nbf !== undefined && now + CLOCK_LEEWAY_SECONDS < nbf)
    throw unauthorized(policy, `the ${label} token is not valid yet`);
}

function decodeJson(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function stringClaim(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() !== "" ? value : undefined;
}

function scopesOf(claims: Record<string, unknown>): string[] {
  if (typeof claims.scope === "string") return claims.scope.split(/\s+/).filter(Boolean);
  if (Array.isArray(claims.scp)) return claims.scp.filter((scope): scope is string => typeof scope === "string");
  return [];
}

function unauthorized(policy: ProtocolBearerPolicy, message: string): HttpProblem {
  return new HttpProblem("unauthorized", message, { "www-authenticate": `Bearer realm="${policy.label}"` });
}
