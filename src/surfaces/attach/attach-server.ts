/**
 * The attach listener: one Elysia app over Bun.serve (or behind the mTLS terminator) with the
 * shared guards, every attach route, and every failure answered as JSON.
 */
import { Elysia } from "elysia";
import { PROTOCOL_VERSION } from "./attach-protocol.ts";
import { DEFAULT_IDLE_TIMEOUT_SECONDS } from "../http/connection-deadlines.ts";
import type { CorsAllowance } from "../http/cors-policy.ts";
import { guardedApp } from "../http/guarded-app.ts";
import { openapiDocument } from "../http/openapi-document.ts";
import { type MtlsTerminator, startMtlsTerminator } from "../http/mtls-terminator.ts";
import { WRITE_BODY_LIMIT } from "../http/request-body.ts";
import { PEER_BODY_LIMIT, isPeerPath, peerRoutes } from "../peers/peer-routes.ts";
import { AGENT_CARD_PATH, type AgentCardOptions, agentCardRoutes } from "./agent-card.ts";
import type { AttachContext } from "./attach-context.ts";
import { AttachStreams } from "./attach-streams.ts";
import { contextRoutes } from "./context-routes.ts";
import { toolResultRoutes } from "./tool-result-routes.ts";
import { controlRoutes } from "./control-routes.ts";
import { daemonRoutes } from "./daemon-routes.ts";
import { guardrailRoutes } from "./guardrail-routes.ts";
import { knowledgeRoutes } from "./knowledge-routes.ts";
import { mcpRoutes } from "./mcp-routes.ts";
import { permsRoutes } from "./perms-routes.ts";
import { subagentRoutes } from "./subagent-routes.ts";
import { pricingRoutes } from "./pricing-routes.ts";
import { PROTOCOL_HEADER } from "./protocol-header.ts";
import { sessionListRoutes, sessionRoutes } from "./session-routes.ts";
import { slashRoutes } from "./slash-routes.ts";
import { titleRoutes } from "./title-routes.ts";
import { toolsRoutes } from "./tools-routes.ts";
import { uiRoutes } from "./ui-routes.ts";

/**
 * What an allowed origin's preflight is granted on the attach listener (D371): every method the
 * API serves, and the headers the mast-web dashboard and the protocol send.
 */
const ATTACH_CORS: CorsAllowance = {
  methods: "GET, POST, PATCH, DELETE",
  headers: "authorization, x-attach-token, x-attach-protocol-version, content-type, accept, last-event-id, traceparent",
};

/** Card options when no card is configured (its route then answers the card-shaped 404). */
const NO_CARD: AgentCardOptions = { bearer: false, mtls: false, skills: () => [] };

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

/**
 * The attach app: the shared guards (guarded-app.ts), the protocol version on every answer, then
 * every route family, the session routes mounted under both path shapes. `listener` holds the
 * app's open streams and encoder caches (its own unless the listener passes the one it drains).
 */
export function buildAttachApp(context: AttachContext, tls?: ListenerTls, listener = new AttachStreams()) {
  const sessionScoped = sessionRouteFamilies(context, listener);
  const app = guardedApp({
    transport: context.transport,
    resolveCaller: context.caller,
    publicPaths: new Set(["/healthz", ...(context.agentCard ? [AGENT_CARD_PATH] : [])]),
    bodyLimit: (pathname) => (context.peerHub && isPeerPath(pathname) ? PEER_BODY_LIMIT : WRITE_BODY_LIMIT),
    responseHeaders: { [PROTOCOL_HEADER]: PROTOCOL_VERSION },
    ...(context.corsOrigins ? { allowedOrigins: context.corsOrigins } : {}),
    corsAllowance: ATTACH_CORS,
    idleTimeoutSeconds: context.idleTimeoutSeconds ?? DEFAULT_IDLE_TIMEOUT_SECONDS,
    serve: {
      development: false,
      idleTimeout: context.idleTimeoutSeconds ?? DEFAULT_IDLE_TIMEOUT_SECONDS,
      maxRequestBodySize: MAX_REQUEST_BODY,
      ...serveTls(tls),
    },
  })
    .use(
      openapiDocument({
        title: "spar attach API",
        version: PROTOCOL_VERSION,
        description: "The agent daemon's attach listener (HTTP + SSE).",
      }),
    )
    .use(daemonRoutes(context))
    .use(
      agentCardRoutes(
        context.agentCard?.settings ?? (() => undefined),
        context.agentCard?.options ?? NO_CARD,
        context.transport.trustedProxies,
      ),
    )
    .use(sessionListRoutes(context))
    .group("/sessions/:p1", (group) => group.use(sessionScoped))
    .group("/sessions/:p1/:p2", (group) => group.use(sessionScoped));
  if (context.ui) app.use(uiRoutes(context.ui));
  if (context.peerHub) app.use(peerRoutes(context.peerHub, { requireIdentity: context.identitiesRequired }));
  return app;
}

/** Every per-session route family, mounted once per path shape. */
function sessionRouteFamilies(context: AttachContext, listener: AttachStreams) {
  return new Elysia({ name: "spar.attach.session-routes" })
    .use(sessionRoutes(context, listener))
    .use(controlRoutes(context))
    .use(permsRoutes(context, listener))
    .use(guardrailRoutes(context))
    .use(pricingRoutes(context))
    .use(toolsRoutes(context))
    .use(knowledgeRoutes(context))
    .use(mcpRoutes(context))
    .use(contextRoutes(context))
    .use(subagentRoutes(context))
    .use(slashRoutes(context))
    .use(titleRoutes(context))
    .use(toolResultRoutes(context));
}

export async function startAttachServer(
  context: AttachContext,
  hostname: string,
  port: number,
  tls?: ListenerTls,
): Promise<AttachServer> {
  const listener = new AttachStreams();
  const app = buildAttachApp(context, tls, listener);
  context.metrics.gauge("spar_sse_subscribers", "Open event streams.", () => listener.streams.size);
  if (tls?.ca !== undefined) return startMutualServer(app, context, listener, hostname, port, { ...tls, ca: tls.ca });
  return servePlain(app, context, listener, { hostname, port }, hostname);
}

/**
 * The attach listener on a unix socket at `path` (svc's `--attach-listen=unix:/path`): the same
 * app and guards, no TLS; its port reads 0. The caller owns the socket file around it.
 */
export async function startAttachSocket(context: AttachContext, path: string): Promise<AttachServer> {
  const listener = new AttachStreams();
  const app = buildAttachApp(context, undefined, listener);
  context.metrics.gauge("spar_sse_subscribers", "Open event streams.", () => listener.streams.size);
  return servePlain(app, context, listener, { unix: path }, `unix:${path}`);
}

/** Listen with Bun.serve itself (no client CA): the heartbeat, and the drain that hangs up streams first. */
function servePlain(
  app: AttachApp,
  context: AttachContext,
  listener: AttachStreams,
  where: { hostname: string; port: number } | { unix: string },
  hostname: string,
): AttachServer {
  app.listen(where);
  const server = app.server;
  if (!server) throw new Error(`attach listener did not start on ${hostname}`);
  listener.streams.startHeartbeat(context.heartbeatMs);
  return {
    port: server.port ?? ("port" in where ? where.port : 0),
    hostname,
    handle: (request) => app.handle(request),
    drain: async (timeoutMs) => {
      listener.streams.stopHeartbeat();
      listener.streams.closeAll("daemon shutting down");
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
/** The attach app as built (its type carries every route, for typed clients). */
export type AttachApp = ReturnType<typeof buildAttachApp>;

async function startMutualServer(
  app: AttachApp,
  context: AttachContext,
  listener: AttachStreams,
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
  listener.streams.startHeartbeat(context.heartbeatMs);
  return {
    port: started.port,
    hostname,
    handle: (request) => app.handle(request),
    drain: async (timeoutMs) => {
      listener.streams.stopHeartbeat();
      listener.streams.closeAll("daemon shutting down");
      await started.close(timeoutMs);
    },
  };
}
