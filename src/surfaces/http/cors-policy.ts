/**
 * Cross-origin browser access to a bearer-authenticated listener (svc's AG-UI listener,
 * `--agui-allowed-origins`; the attach listener, `--attach-cors-origins`, D371): deny by default. A listener names the exact origins (`scheme://host[:port]`, no path, no wildcard)
 * allowed to call it from a browser; for those only, a preflight (`OPTIONS` with
 * `Access-Control-Request-Method`) is answered 204 before authentication (browsers send no
 * credentials on a preflight) and every answer, refusals included, carries
 * `Access-Control-Allow-Origin` naming that origin, so the page can read a 401 or a 429. Any other
 * origin's preflight is a 403 and its writes are refused by the CSRF guard (request-guards.ts),
 * which lets the allowed origins through. No cookies are involved: credentials mode is never
 * allowed (the bearer travels in `Authorization`).
 */
import { Elysia } from "elysia";
import { type Result, err, ok } from "../../core/result.ts";
import { json } from "./responses.ts";

/** Lower-case serialized origins (`https://app.example.com`, `http://localhost:3000`). */
export type AllowedOrigins = ReadonlySet<string>;

/** What a listener's preflight allows: methods and request headers (default: what AG-UI clients send). */
export interface CorsAllowance {
  methods: string;
  headers: string;
}

const AGUI_ALLOWANCE: CorsAllowance = {
  methods: "GET, POST",
  headers: "authorization, content-type, accept, traceparent, tracestate, baggage",
};
/** Response headers a page may read besides the CORS-safelisted ones. */
const EXPOSED_HEADERS = "retry-after, www-authenticate";

/** Parse a list of origins; each must be `http(s)://host[:port]` exactly. */
export function parseAllowedOrigins(entries: readonly string[], from: string): Result<AllowedOrigins> {
  const origins = new Set<string>();
  for (const entry of entries) {
    let url: URL;
    try {
      url = new URL(entry);
    } catch {
      return err(`${from}: ${JSON.stringify(entry)} is not an origin (want scheme://host[:port])`);
    }
    const web = url.protocol === "http:" || url.protocol === "https:";
    if (!web || entry.includes("*") || url.origin !== entry.replace(/\/$/, "").toLowerCase())
      return err(
        `${from}: ${JSON.stringify(entry)} is not an origin (want http(s)://host[:port], no path, no wildcard)`,
      );
    origins.add(url.origin);
  }
  return ok(origins);
}

/** The request's Origin when it is one of `allowed`. */
export function allowedOrigin(request: Request, allowed: AllowedOrigins): string | undefined {
  const origin = request.headers.get("origin")?.trim().toLowerCase();
  return origin !== undefined && allowed.has(origin) ? origin : undefined;
}

/** The CORS plugin: runs before the auth guard (a preflight carries no credentials). */
export function corsGuard(allowed: AllowedOrigins, allowance: CorsAllowance = AGUI_ALLOWANCE) {
  return new Elysia({ name: "spar.cors-guard", seed: [...allowed] }).onRequest(({ request, set }) => {
    const preflight = request.method === "OPTIONS" && request.headers.has("access-control-request-method");
    const origin = allowedOrigin(request, allowed);
    if (origin === undefined) {
      if (preflight)
        return json(403, {
          error: `cross-origin request refused: origin ${request.headers.get("origin")} is not allowed`,
        });
      return;
    }
    set.headers["access-control-allow-origin"] = origin;
    set.headers.vary = "Origin";
    set.headers["access-control-expose-headers"] = EXPOSED_HEADERS;
    if (!preflight) return;
    return new Response(null, {
      status: 204,
      headers: {
        "access-control-allow-origin": origin,
        "access-control-allow-methods": allowance.methods,
        "access-control-allow-headers": allowance.headers,
        "access-control-max-age": "600",
        vary: "Origin",
      },
    });
  });
}
