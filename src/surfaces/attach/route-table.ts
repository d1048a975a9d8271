/**
 * RouteTable: registers attach routes on Elysia with the conventions every route shares:
 * both session path shapes (`/sessions/{sid}/x` and `/sessions/{app}/{sid}/x`), the JSON
 * media-type check on writes (415), the protocol-version header on every response, SparError
 * mapping, and the 404 / 405 answers for unknown paths and methods.
 */
import type { Elysia } from "elysia";
import { PROTOCOL_VERSION } from "../../core/protocol.ts";
import { errorResponse, json } from "../http/responses.ts";
import { type Caller, LOCAL_CALLER } from "../http/caller-auth.ts";
import { type TransportPolicy, checkConnection, checkCsrf, checkTransport } from "../http/request-guards.ts";
import { checkHeaderSize } from "../http/header-limit.ts";
import { checkAllowedHost } from "../http/host-allowlist.ts";
import { isTrustedProxy } from "../http/trusted-proxies.ts";
import { checkHostHeader, requestUrl } from "../http/request-url.ts";

export const PROTOCOL_HEADER = "x-attach-protocol-version";

export interface RouteContext {
  request: Request;
  params: Record<string, string | undefined>;
  url: URL;
  /** The authenticated caller (the local caller on public routes). */
  caller: Caller;
  /** The connection comes from a trusted proxy: its X-Forwarded-* headers may be believed. */
  viaTrustedProxy: boolean;
  /**
   * Lift the listener's idle timeout for this request: an event stream, or a call that waits on
   * a model for minutes with nothing on the wire. Call it after the body is read.
   */
  keepOpen(): void;
}

/** A session-scoped route sees the path's app (qualified shape only) and session id. */
export interface SessionRouteContext extends RouteContext {
  app: string | undefined;
  sid: string;
}

export type Handler<T extends RouteContext = RouteContext> = (context: T) => Response | Promise<Response>;

type Method = "GET" | "HEAD" | "POST" | "PATCH" | "DELETE" | "PUT";

interface Registered {
  method: Method;
  pattern: RegExp;
}

interface PeerLookup {
  requestIP(request: Request): { address: string } | null;
  timeout(request: Request, seconds: number): void;
}

interface RoutableApp {
  route(
    method: string,
    path: string,
    handler: (context: {
      request: Request;
      params: Record<string, string | undefined>;
      server: PeerLookup | null;
    }) => unknown,
    hook?: { parse: "none" },
  ): unknown;
}

function toPattern(path: string): RegExp {
  const source = path
    .split("/")
    .map((segment) => (segment.startsWith(":") ? "[^/]+" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${source}$`);
}

export function withProtocolHeader(response: Response): Response {
  response.headers.set(PROTOCOL_HEADER, PROTOCOL_VERSION);
  return response;
}

export interface RouteOptions {
  /** Served ahead of authentication (exact path only): /healthz and the agent card. */
  public?: boolean;
}

export class RouteTable {
  readonly #app: RoutableApp;
  readonly #registered: Registered[] = [];
  readonly #transport: TransportPolicy;
  /** Exact paths served ahead of authentication, whatever the method (405s included). */
  readonly #publicPaths = new Set<string>();

  readonly #resolveCaller: (request: Request, peer: string | undefined) => Caller;

  constructor(
    app: Elysia,
    transport: TransportPolicy,
    resolveCaller: (request: Request, peer: string | undefined) => Caller = () => LOCAL_CALLER,
  ) {
    this.#app = app as unknown as RoutableApp;
    this.#transport = transport;
    this.#resolveCaller = resolveCaller;
  }

  add(method: Method, path: string, handler: Handler, options: RouteOptions = {}): void {
    this.#registered.push({ method, pattern: toPattern(path) });
    if (options.public) this.#publicPaths.add(path);
    this.#app.route(
      method,
      path,
      async ({ request, params, server }) => {
        try {
          const peer = this.#headerChecks(request);
          if (!options.public) checkTransport(request, this.#transport);
          const caller = options.public ? LOCAL_CALLER : this.#resolveCaller(request, peer);
          checkCsrf(request);
          const viaTrustedProxy =
            this.#transport.trustedProxies !== undefined &&
            isTrustedProxy(server?.requestIP(request)?.address, this.#transport.trustedProxies);
          const keepOpen = () => server?.timeout(request, 0);
          return withProtocolHeader(
            await handler({ request, params, url: requestUrl(request), caller, viaTrustedProxy, keepOpen }),
          );
        } catch (error) {
          return withProtocolHeader(errorResponse(error));
        }
      },
      { parse: "none" },
    );
  }

  /**
   * What every request passes first, public routes and unknown paths included, in this order:
   * header size (431), Host syntax (400), the DNS-rebinding guard of an ungated listener (421),
   * the mTLS connection (403). Answers the connection's certificate subject, if any.
   */
  #headerChecks(request: Request): string | undefined {
    checkHeaderSize(request);
    checkHostHeader(request);
    checkAllowedHost(request, this.#transport.allowedHosts);
    return checkConnection(request, this.#transport);
  }

  /** Register both shapes of a session route; `suffix` is "" for the bare session URL. */
  session(method: Method, suffix: string, handler: Handler<SessionRouteContext>): void {
    const tail = suffix === "" ? "" : `/${suffix}`;
    this.add(method, `/sessions/:p1${tail}`, (context) =>
      handler({ ...context, app: undefined, sid: context.params.p1 ?? "" }),
    );
    this.add(method, `/sessions/:p1/:p2${tail}`, (context) =>
      handler({ ...context, app: context.params.p1 ?? "", sid: context.params.p2 ?? "" }),
    );
  }

  /** Methods registered for a path, for 405 answers. */
  allowedMethods(pathname: string): Method[] {
    const methods = new Set<Method>();
    for (const route of this.#registered) if (route.pattern.test(pathname)) methods.add(route.method);
    return [...methods];
  }

  /** A failure Elysia caught outside a handler (never expected): JSON, never a bare 500 page. */
  failure(error: unknown): Response {
    return withProtocolHeader(errorResponse(error));
  }

  /** The answer for a request no route matched: 401 when unauthenticated, 405 on a known path, else 404. */
  unmatched(request: Request): Response {
    const url = requestUrl(request);
    try {
      const peer = this.#headerChecks(request);
      if (!this.#publicPaths.has(url.pathname)) {
        checkTransport(request, this.#transport);
        // Routing answers (405 with Allow, 404) are for authenticated callers only.
        this.#resolveCaller(request, peer);
      }
    } catch (error) {
      return withProtocolHeader(errorResponse(error));
    }
    const allowed = this.allowedMethods(url.pathname);
    if (allowed.length > 0) {
      return withProtocolHeader(
        json(
          405,
          { error: `method ${request.method} is not allowed on ${url.pathname}; allowed: ${allowed.join(", ")}` },
          { allow: allowed.join(", ") },
        ),
      );
    }
    return withProtocolHeader(json(404, { error: `no such endpoint: ${request.method} ${url.pathname}` }));
  }
}
