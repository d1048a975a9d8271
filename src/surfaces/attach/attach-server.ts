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
/**
 * Behind the mTLS terminator, which parses requests itself: the largest body it passes on (a
 * JSON 413 beyond, the routes' own limits below).
 */
const MAX_TERMINATED_BODY = 1024 * 1024;
/** Behind the mTLS terminator: bytes an event stream may have waiting on its client (no configured bound). */
const MAX_STREAM_BACKLOG = 8 * 1024 * 1024;

export interface AttachServer {
  readonly port: number;
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
  const app = new Elysia({
    strictPath: true,
    serve: {
      development: false,
      idleTimeout: context.idleTimeoutSeconds ?? 60,
      maxRequestBodySize: MAX_REQUEST_BODY,
      ...serveTls(tls),
    },
  });
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
  if (context.peerHub) registerPeerRoutes(table, context.peerHub, { requireIdentity: context.identitiesRequired });
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

export async function startAttachServer(
  context: AttachContext,
  hostname: string,
  port: number,
  tls?: ListenerTls,
): Promise<AttachServer> {
  const app = buildAttachApp(context, tls);
  if (tls?.ca !== undefined) return startMutualServer(app, context, hostname, port, { ...tls, ca: tls.ca });
  app.listen({ hostname, port });
  const server = app.server;
  if (!server) throw new Error(`attach listener did not start on ${hostname}:${port}`);
  startHeartbeat(context.heartbeatMs);
  return {
    port: server.port ?? port,
    hostname,
    handle: (request) => app.handle(request),
    drain: async (timeoutMs) => {
      stopHeartbeat();
      closeAllStreams("daemon shutting down");
      const stopped = server.stop(false);
      const timeout = new Promise<void>((resolve) => setTimeout(resolve, timeoutMs).unref?.());
      await Promise.race([stopped, timeout]);
      await server.stop(true);
    },
  };
}

/**
 * With a client CA (D57): no Bun.serve at all. The terminator verifies each client and hands its
 * requests to the app in process, each Request tagged with its connection's subject; a Request
 * the terminator did not hand over (an in-process `handle` call) has no subject and is refused.
 */
async function startMutualServer(
  app: Elysia,
  context: AttachContext,
  hostname: string,
  port: number,
  tls: Required<ListenerTls>,
): Promise<AttachServer> {
  // Set before the port opens: no request is ever served without the connection check.
  let terminator: MtlsTerminator | undefined;
  context.transport.peerIdentity = (request) => terminator?.identityOf(request);
  terminator = await startMtlsTerminator({
    hostname,
    port,
    cert: tls.cert,
    key: tls.key,
    ca: tls.ca,
    handle: (request) => app.handle(request),
    maxRequestBodyBytes: MAX_TERMINATED_BODY,
    maxBacklogBytes: context.subscriberBuffer.maxQueuedBytes ?? MAX_STREAM_BACKLOG,
  });
  const started = terminator;
  startHeartbeat(context.heartbeatMs);
  return {
    port: started.port,
    hostname,
    handle: (request) => app.handle(request),
    drain: async (timeoutMs) => {
      stopHeartbeat();
      closeAllStreams("daemon shutting down");
      await started.close(timeoutMs);
    },
  };
}
