/**
 * A listener's Elysia app with the shared guards on, in the order of
 * docs/security.md#order-of-the-checks-on-every-request: response headers every answer carries,
 * then before routing the header size, the Host, the DNS-rebinding check, the mTLS connection, the
 * token and the caller; once the route is known and before its body is read the CORS preflight of
 * an allowed origin (cors-policy.ts) before the token, the CSRF check, then the JSON body within
 * its limit and deadline; the connection's idle timeout lifted while a handler runs
 * (connection-deadlines.ts); and one error mapper for every failure (405 from the app's own
 * routes). Every listener starts from here, so none re-implements a guard, and every request,
 * refused ones included, runs inside its HTTP server span (server-spans.ts).
 */
import { Elysia } from "elysia";
import { type AuthGuardOptions, authGuard } from "./auth-guard.ts";
import { type BodyLimit, csrfGuard, jsonBody } from "./body-guards.ts";
import { type AllowedOrigins, type CorsAllowance, corsGuard } from "./cors-policy.ts";
import { DEFAULT_IDLE_TIMEOUT_SECONDS, connectionDeadlines } from "./connection-deadlines.ts";
import { errorMapper } from "./error-mapper.ts";
import { hostGuard } from "./host-guard.ts";
import { serverSpans } from "./server-spans.ts";

export interface GuardedAppOptions extends AuthGuardOptions {
  /** Body limits by path (default 8 KiB everywhere). */
  bodyLimit?: BodyLimit;
  /** A top-level JSON array reaches the routes (default: refused 400); A2A's JSON-RPC answers a batch itself (D340). */
  jsonArrays?: boolean;
  /** Headers every answer of the listener carries (refusals included). */
  responseHeaders?: Readonly<Record<string, string>>;
  /**
   * JSON media types the writes may carry besides `application/json` (the CloudEvents receiver's
   * `application/cloudevents+json`, D402); read by the same body guard.
   */
  jsonTypes?: readonly string[];
  /** Browser origins allowed cross-origin (CORS and the CSRF guard; cors-policy.ts); none by default. */
  allowedOrigins?: AllowedOrigins;
  /** The methods and request headers an allowed origin's preflight is granted (default: AG-UI's). */
  corsAllowance?: CorsAllowance;
  /** Bun.serve options when the app listens itself. */
  serve?: Partial<Bun.Serve.Options<undefined>>;
  /**
   * Seconds a client may send nothing, and the time a body has to arrive whole
   * (connection-deadlines.ts). The app must listen itself (`listenOn`): with its own `serve`
   * options, their `idleTimeout` must be the same. Default DEFAULT_IDLE_TIMEOUT_SECONDS.
   */
  idleTimeoutSeconds?: number;
}

export function guardedApp(options: GuardedAppOptions) {
  const built: { routes?: () => ReadonlyArray<{ method: string; path: string }> } = {};
  const headers = Object.entries(options.responseHeaders ?? {});
  const idleTimeout = options.idleTimeoutSeconds ?? DEFAULT_IDLE_TIMEOUT_SECONDS;
  // strictPath: `/healthz/` is not `/healthz` (an auth exemption is for the exact path only).
  const app = new Elysia({ strictPath: true, serve: options.serve ?? { development: false, idleTimeout } })
    .use(serverSpans())
    .use(connectionDeadlines(idleTimeout))
    .onRequest(({ set }) => {
      for (const [name, value] of headers) set.headers[name] = value;
    })
    .use(errorMapper(() => built.routes?.() ?? []))
    .use(hostGuard(options.transport.allowedHosts))
    .use(corsGuard(options.allowedOrigins ?? new Set(), options.corsAllowance))
    .use(authGuard(options))
    .use(csrfGuard(options.allowedOrigins, options.jsonTypes))
    .use(jsonBody(options.bodyLimit, { deadlineMs: idleTimeout * 1000, arrays: options.jsonArrays ?? false }));
  built.routes = () => app.routes;
  return app;
}

/**
 * Listen on `where` through the app itself, so that its routes and guards see the server (a
 * Bun.serve given `app.fetch` leaves Elysia's `server` null, and no idle timeout could be
 * lifted). Throws what Bun.serve throws (a taken port, an address not of this machine).
 */
export function listenOn(
  app: { listen(where: { hostname: string; port: number }): unknown; server: Bun.Server<undefined> | null },
  where: { hostname: string; port: number },
): Bun.Server<undefined> {
  app.listen(where);
  if (!app.server) throw new Error(`did not start listening on ${where.hostname}:${where.port}`);
  return app.server;
}
