/**
 * The attach listener: one Elysia app over Bun.serve with every attach route registered,
 * SSE-friendly serve options (no idle timeout; heartbeats instead), and unknown paths and
 * methods answered as JSON.
 */
import { Elysia } from "elysia";
import { type MtlsTerminator, startMtlsTerminator } from "../http/mtls-terminator.ts";
import { closeAllStreams, startHeartbeat, stopHeartbeat } from "../http/sse-stream.ts";
import type { AttachContext } from "./attach-context.ts";
import { registerControlRoutes } from "./control-routes.ts";
import { registerDaemonRoutes } from "./daemon-routes.ts";
import { registerGuardrailRoutes } from "./guardrail-routes.ts";
import { registerKnowledgeRoutes } from "./knowledge-routes.ts";
import { registerMcpRoutes } from "./mcp-routes.ts";
import { registerPermsRoutes } from "./perms-routes.ts";
import { registerPlaceholderRoutes } from "./placeholder-routes.ts";
import { registerContextRoutes } from "./context-routes.ts";
import { registerPricingRoutes } from "./pricing-routes.ts";
import { registerToolsRoutes } from "./tools-routes.ts";
import { registerPeerRoutes } from "../peers/peer-routes.ts";
import { registerAgentCardRoutes } from "./agent-card.ts";
import { RouteTable } from "./route-table.ts";
import { registerSessionRoutes } from "./session-routes.ts";

/**
 * Bun's own body cap, lifted: Bun answers it with an empty 413 before any handler runs, so the
 * routes' limits (8 KiB, 16 KiB) decide instead, from Content-Length before reading and while
 * reading a chunked body, and every 413 is JSON. A route that reads no body never buffers one.
 */
const MAX_REQUEST_BODY = Number.MAX_SAFE_INTEGER;



export interface AttachServer {
  readonly port: number;
  /** Behind an mTLS terminator: the private loopback port of the HTTP server (refuses direct use). */
  readonly innerPort?: number;
  readonly hostname: string;
  /** Hang up SSE streams, then stop accepting and finish in-flight requests (bounded). */
  drain(timeoutMs: number): Promise<void>;
  /** The app, for in-process `handle(new Request(...))` tests. */
  handle(request: Request): Promise<Response>;
}

/** TLS of the listener: PEM files; with `ca`, clients must present a certificate it signed. */
export interface ListenerTls {
  cert: string;
  key: string;
  ca?: string;
}

/** TLS Bun.serve terminates itself; with a client CA the mTLS terminator does instead. */
function serveTls(tls: ListenerTls | undefined) {
  if (!tls || tls.ca) return {};
  const files = { cert: Bun.file(tls.cert), key: Bun.file(tls.key) };
  return { tls: files };
}

export function buildAttachApp(context: AttachContext, tls?: ListenerTls): Elysia {
  // strictPath: `/healthz/` is not `/healthz` (its auth exemption is for the exact path only).
  const app = new Elysia({ strictPath: true, serve: { development: false, idleTimeout: context.idleTimeoutSeconds ?? 60, maxRequestBodySize: MAX_REQUEST_BODY, ...serveTls(tls) } });
  const table = new RouteTable(app, context.transport, (request, peer) => context.caller(request, peer));
  registerDaemonRoutes(table, context);
  if (context.agentCard) registerAgentCardRoutes(table, context.agentCard.settings, context.agentCard.options);
  registerSessionRoutes(table, context);
  registerControlRoutes(table, context);
  registerPermsRoutes(table, context);
  registerGuardrailRoutes(table, context);
  registerPricingRoutes(table, context);
  registerToolsRoutes(table, context);
  registerKnowledgeRoutes(table, context);
  registerMcpRoutes(table, context);
  registerContextRoutes(table, context);
  registerPlaceholderRoutes(table, context);
  if (context.peerHub) registerPeerRoutes(table, context.peerHub, (request) => context.caller(request), { requireIdentity: context.identitiesRequired });
  app.onError(({ code, request, error }) => {
    try {
      if (code === "NOT_FOUND") return table.unmatched(request);
    } catch (unexpected) {
      return table.failure(unexpected);
    }
    return table.failure(error);
  });
  return app;
}

export async function startAttachServer(context: AttachContext, hostname: string, port: number, tls?: ListenerTls): Promise<AttachServer> {
  const mutual = tls?.ca !== undefined;
  let terminator: MtlsTerminator | undefined;
  if (mutual) {
    // Every request must come through the terminator; it knows each connection's subject.
    context.transport.peerIdentity = (request) => {
      const peer = app.server?.requestIP(request);
      return peer ? terminator?.identityOf(peer.port) : undefined;
    };
  }
  const app = buildAttachApp(context, tls);
  app.listen(mutual ? { hostname: "127.0.0.1", port: 0 } : { hostname, port });
  const server = app.server;
  if (!server) throw new Error(`attach listener did not start on ${hostname}:${port}`);
  if (tls?.ca !== undefined) {
    terminator = await startMtlsTerminator({ hostname, port, cert: tls.cert, key: tls.key, ca: tls.ca, upstreamPort: server.port ?? 0 });
  }
  startHeartbeat(context.heartbeatMs);
  return {
    port: terminator?.port ?? server.port ?? port,
    ...(terminator ? { innerPort: server.port ?? 0 } : {}),
    hostname,
    handle: (request) => app.handle(request),
    drain: async (timeoutMs) => {
      stopHeartbeat();
      closeAllStreams("daemon shutting down");
      await terminator?.close();
      const stopped = server.stop(false);
      const timeout = new Promise<void>((resolve) => setTimeout(resolve, timeoutMs).unref?.());
      await Promise.race([stopped, timeout]);
      await server.stop(true);
    },
  };
}
