/**
 * The guards every listener runs before its routes. Transport layer: the shared bearer token
 * (`X-Attach-Token` decides when present, else `Authorization: Bearer`; constant-time compare;
 * 401 with `WWW-Authenticate: Bearer realm="attach"` and a body naming the header and where the
 * token comes from) and read-only mode (403 for writes).
 * Browser CSRF guard on every write: `Content-Type: application/json` (415) and an Origin that
 * is loopback or the request's own Host (403; the `null` origin is refused; no Origin passes).
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { SparError } from "../../core/errors.ts";
import type { HostAllowlist } from "./host-allowlist.ts";
import type { TrustedProxies } from "./trusted-proxies.ts";
import { HttpProblem } from "./http-problem.ts";
import { isJsonContentType } from "./request-body.ts";

export interface TransportPolicy {
  /** The shared bearer token; undefined when the listener has none. */
  token: string | undefined;
  /** What the token is called in a refusal and its realm (default `attach`; svc's main listener: `inject`). */
  tokenLabel?: string;
  /**
   * Where a caller gets the token, for the refusal (D339): svc's main listener names its variable
   * (`the value of SVC_INJECT_TOKEN`); default, the agent's: the variable `--attach-token` names.
   */
  tokenSource?: string;
  readonly: boolean;
  /**
   * The Hosts a listener without an authentication gate serves (DNS-rebinding guard);
   * undefined when the listener has a gate (token, mTLS, or callers without anonymous access).
   */
  allowedHosts?: HostAllowlist;
  /** Peers whose X-Forwarded-Host and -Proto are believed (`--attach-trusted-proxies`). */
  trustedProxies?: TrustedProxies;
  /**
   * Behind the mTLS terminator: the verified client subject of a request's connection, or
   * undefined for a connection the terminator did not open (refused on every path).
   */
  peerIdentity?: (request: Request) => string | undefined;
}

/** Refuse connections that skipped the mTLS terminator; returns the client subject. */
export function checkConnection(request: Request, policy: TransportPolicy): string | undefined {
  if (!policy.peerIdentity) return undefined;
  const identity = policy.peerIdentity(request);
  if (identity === undefined)
    throw new SparError("forbidden", "connect through the TLS listener with a client certificate");
  return identity;
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

export function isSafeMethod(method: string): boolean {
  return SAFE_METHODS.has(method.toUpperCase());
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

/** Constant-time equality (both sides hashed first, so lengths leak nothing either). */
export function tokensMatch(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), digest(expected));
}

function presentedToken(request: Request): string | undefined {
  const explicit = request.headers.get("x-attach-token");
  if (explicit !== null) return explicit;
  const authorization = request.headers.get("authorization");
  const match = authorization ? /^Bearer\s+(.+)$/i.exec(authorization.trim()) : null;
  return match?.[1];
}

/** The 401's text: which token, the header that carries it and where it comes from; never a value (D339). */
export function tokenRefusal(policy: Pick<TransportPolicy, "tokenLabel" | "tokenSource">): string {
  const label = policy.tokenLabel ?? "attach";
  const source = policy.tokenSource ?? "the listener's token (the variable --attach-token names)";
  const headers =
    label === "attach" ? "Authorization: Bearer <token> or X-Attach-Token: <token>" : "Authorization: Bearer <token>";
  return `missing or wrong ${label} token: send ${source} as ${headers}`;
}

export function checkTransport(request: Request, policy: TransportPolicy): void {
  if (policy.token !== undefined) {
    const presented = presentedToken(request);
    if (presented === undefined || !tokensMatch(presented, policy.token)) {
      throw new HttpProblem("unauthorized", tokenRefusal(policy), {
        "www-authenticate": `Bearer realm="${policy.tokenLabel ?? "attach"}"`,
      });
    }
  }
  if (policy.readonly && !isSafeMethod(request.method)) {
    throw new SparError("forbidden", "this listener is read-only: only GET, HEAD and OPTIONS are served");
  }
}

function isLoopbackHostname(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  return host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * `allowedOrigins`: origins a listener lets through besides loopback and its own Host (cors-policy.ts).
 * `jsonTypes`: JSON media types the listener takes besides `application/json` (none a browser
 * form can send, so the check holds).
 */
export function checkCsrf(
  request: Request,
  allowedOrigins?: ReadonlySet<string>,
  jsonTypes: readonly string[] = [],
): void {
  if (isSafeMethod(request.method)) return;
  if (!isJsonContentType(request, jsonTypes)) {
    const accepted = ["application/json", ...jsonTypes].join(" or ");
    throw new SparError("unsupported_media_type", `state-changing requests need Content-Type: ${accepted}`);
  }
  const origin = request.headers.get("origin");
  if (origin === null) return;
  let url: URL;
  try {
    if (origin.trim().toLowerCase() === "null") throw new Error("null origin");
    url = new URL(origin);
  } catch {
    throw new SparError("forbidden", `cross-origin request refused: origin ${JSON.stringify(origin)}`);
  }
  if (isLoopbackHostname(url.hostname)) return;
  if (allowedOrigins?.has(url.origin)) return;
  const host = request.headers.get("host");
  if (host !== null && url.host.toLowerCase() === host.toLowerCase()) return;
  throw new SparError("forbidden", `cross-origin request refused: origin ${origin} is neither loopback nor this host`);
}
