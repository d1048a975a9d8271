/**
 * The request's URL and Host, read without throwing. Bun hands a handler a bare path as
 * `request.url` when the client sent no Host (HTTP/1.0) and an unparseable URL when the Host is
 * malformed (`a b`, `[::1`, `x:99999`), so `new URL(request.url)` cannot be trusted at the edge.
 */
import { SparError } from "../../core/errors.ts";

const HOST_SYNTAX = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::(\d{1,5}))?$/;
/** Stands in for a missing or invalid Host when only the path and query matter. */
const PLACEHOLDER_ORIGIN = "http://localhost";

/**
 * `host` when it is a host[:port] a URL can carry (no user info, a port in range), else
 * undefined. Checked on every request, so without building a URL.
 */
export function validHost(host: string | null | undefined): string | undefined {
  if (!host) return undefined;
  const match = HOST_SYNTAX.exec(host);
  if (!match) return undefined;
  const port = match[1];
  return port === undefined || Number(port) <= 65_535 ? host : undefined;
}

/** The request URL; with no usable Host its path and query under a placeholder origin. */
export function requestUrl(request: Request): URL {
  try {
    return new URL(request.url);
  } catch {
    const raw = request.url;
    const authority = raw.indexOf("://");
    const pathStart = authority < 0 ? raw.indexOf("/") : raw.indexOf("/", authority + 3);
    const pathAndQuery = pathStart < 0 ? "/" : raw.slice(pathStart);
    try {
      return new URL(pathAndQuery, PLACEHOLDER_ORIGIN);
    } catch {
      return new URL("/", PLACEHOLDER_ORIGIN);
    }
  }
}

/**
 * A present but malformed Host is a 400 (RFC 9112 section 3.2); an absent one (HTTP/1.0) is
 * served, and URLs the daemon builds from it are bare paths.
 */
export function checkHostHeader(request: Request): void {
  const host = request.headers.get("host");
  if (host !== null && validHost(host) === undefined) {
    throw new SparError(
      "bad_request",
      `invalid Host header ${JSON.stringify(host.slice(0, 200))}: expected host[:port]`,
    );
  }
}
