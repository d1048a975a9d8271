/**
 * Who is calling, decided from headers (and the TLS connection) before routing and before the body
 * is read, in the order of docs/security.md#order-of-the-checks-on-every-request: the mTLS
 * connection (403 for one the TLS listener did not verify), the transport token and read-only mode
 * (401, 403), then the per-caller layer (401). The exact public paths (`/healthz`, the agent card)
 * skip the token and caller layers; so an unknown path or a wrong method answers 404/405 only to an
 * authenticated caller. Routes receive the resolved `caller`.
 */
import { Elysia } from "elysia";
import { type Caller, LOCAL_CALLER } from "./caller-auth.ts";
import { edgeState } from "./edge-state.ts";
import { type TransportPolicy, checkConnection, checkTransport } from "./request-guards.ts";
import { requestUrl } from "./request-url.ts";

export interface AuthGuardOptions {
  transport: TransportPolicy;
  /** The per-caller layer: the caller of a request, or a thrown 401 problem. */
  resolveCaller: (request: Request, peer: string | undefined) => Caller;
  /** Exact paths served before authentication. */
  publicPaths: ReadonlySet<string>;
}

export function authGuard(options: AuthGuardOptions) {
  return new Elysia({ name: "spar.auth-guard", seed: options })
    .onRequest(({ request }) => {
      const state = edgeState(request);
      const peer = checkConnection(request, options.transport);
      if (peer !== undefined) state.peer = peer;
      if (options.publicPaths.has(requestUrl(request).pathname)) {
        state.caller = LOCAL_CALLER;
        return;
      }
      checkTransport(request, options.transport);
      state.caller = options.resolveCaller(request, peer);
    })
    .resolve({ as: "global" }, ({ request }) => ({ caller: edgeState(request).caller ?? LOCAL_CALLER }));
}
