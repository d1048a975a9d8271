/**
 * svc's A2A listener (`--a2a-listen`; docs/svc-a2a.md#endpoints): the public agent cards and `POST
 * /a2a`, JSON-RPC 2.0 with `message/send`, `message/stream`, `tasks/get`, `tasks/cancel` and
 * `tasks/resubscribe` (a2a-tasks.ts runs them). Built on the shared guards (guardedApp: Host, the
 * `SVC_A2A_TOKEN` bearer or a JWT signed with it via protocolCaller, CSRF, the body limit), then in
 * order: the workload's scopes (403), the method, draining and the rate limit for sends (retryable
 * -32000 with `Retry-After`; `tasks/get`, `tasks/cancel` and `tasks/resubscribe` are never
 * limited), the params. Every refusal is decided before a stream opens; JSON-RPC errors answer HTTP
 * 200 as the transport says, codes from the one table (json-rpc-errors.ts); a batch (a JSON array)
 * is one -32600 with id null (D340).
 */
import { Elysia } from "elysia";
import * as v from "valibot";
import { SparError } from "../../core/errors.ts";
import { LOOPBACK_ONLY_ORIGIN, type PublicOrigin, publicBaseUrl } from "../../surfaces/http/public-origin.ts";
import { type TrustedProxies, isTrustedProxy } from "../../surfaces/http/trusted-proxies.ts";
import { guardedApp } from "../../surfaces/http/guarded-app.ts";
import type { HostAllowlist } from "../../surfaces/http/host-allowlist.ts";
import { jsonRpcError, retryAfterOf } from "../../surfaces/http/json-rpc-errors.ts";
import { missingScopes, protocolCaller } from "../../surfaces/http/protocol-bearer.ts";
import type { RateLimiter } from "../../surfaces/http/rate-limiter.ts";
import type { StreamAdmission } from "../../surfaces/http/stream-admission.ts";
import { json } from "../../surfaces/http/responses.ts";
import { withCaller } from "../../surfaces/http/with-caller.ts";
import type { Caller } from "../../surfaces/http/caller-auth.ts";
import type { Workload } from "../workload/workload.ts";
import {
  A2A_PROTOCOL_VERSION,
  JsonRpcRequest,
  MessageSendParams,
  type RequestIdValue,
  TaskIdParams,
} from "../../protocols/a2a/a2a-wire.ts";
import type { A2aTasks } from "./a2a-tasks.ts";
import { aggregatedCard, workloadCard } from "./agent-card.ts";
import { routeSkill, skillSelector } from "./skill-route.ts";
import { jsonRpcStream } from "./json-rpc-stream.ts";

/** A message's body may carry more than an operator's 8 KiB write. */
export const A2A_BODY_LIMIT = 64 * 1024;

/** The identity of a caller presenting `SVC_A2A_TOKEN` itself. */
export const A2A_IDENTITY = "svc-a2a";

interface PeerLookup {
  requestIP(request: Request): { address: string } | null;
}

export interface A2aListenerOptions {
  /** Which Host names the cards may repeat, and the listener's own address (D333). */
  cardOrigin?: PublicOrigin;
  /** Proxies whose X-Forwarded-Host and X-Forwarded-Proto the cards believe. */
  trustedProxies?: TrustedProxies;
  /** The daemon's open-stream caps: each `message/stream` and `tasks/resubscribe` holds one (D334). */
  streams?: StreamAdmission;
  tasks: A2aTasks;
  /** The exposed workloads (one per daemon today). */
  workloads: readonly Workload[];
  token: string | undefined;
  limiter: RateLimiter | undefined;
  version: string;
  /** The Hosts served without a token (DNS rebinding); undefined with a token. */
  allowedHosts?: HostAllowlist;
  /** Seconds a client may send nothing (the listener's Bun.serve `idleTimeout`; connection-deadlines.ts). */
  idleTimeoutSeconds?: number;
}

const METHODS = new Set(["message/send", "message/stream", "tasks/get", "tasks/cancel", "tasks/resubscribe"]);

export function a2aListenerApp(options: A2aListenerOptions) {
  const cardPaths = options.workloads.map((workload) => `/.well-known/agent-card/${workload.name}.json`);
  return guardedApp({
    transport: {
      token: undefined,
      readonly: false,
      tokenLabel: "a2a",
      ...(options.allowedHosts ? { allowedHosts: options.allowedHosts } : {}),
    },
    resolveCaller: (request) =>
      protocolCaller(request, { secret: options.token, label: "a2a", identity: A2A_IDENTITY }),
    publicPaths: new Set(["/.well-known/agent-card.json", ...cardPaths]),
    bodyLimit: () => A2A_BODY_LIMIT,
    ...(options.idleTimeoutSeconds ? { idleTimeoutSeconds: options.idleTimeoutSeconds } : {}),
    // A batch is refused as JSON-RPC (-32600, id null), not by the shared parser's HTTP 400 (D340).
    jsonArrays: true,
    responseHeaders: { "A2A-Version": A2A_PROTOCOL_VERSION },
  }).use(a2aRoutes(options));
}

function a2aRoutes(options: A2aListenerOptions) {
  const origin = options.cardOrigin ?? LOOPBACK_ONLY_ORIGIN;
  const cardOptions = (request: Request, server: PeerLookup | null) => ({
    // Never an unchecked Host: a public card naming the attacker's host sends bearers there (D333).
    baseUrl: publicBaseUrl(
      request,
      origin,
      options.trustedProxies !== undefined &&
        isTrustedProxy(server?.requestIP(request)?.address, options.trustedProxies),
    ),
    version: options.version,
    bearer: options.token !== undefined,
  });
  return new Elysia({ name: "svc.a2a-routes" })
    .use(withCaller)
    .get("/.well-known/agent-card.json", ({ request, server }) =>
      json(200, aggregatedCard(options.workloads, cardOptions(request, server))),
    )
    .get("/.well-known/agent-card/:file", ({ request, params, server }) => {
      const workload = options.workloads.find((entry) => `${entry.name}.json` === params.file);
      if (workload === undefined) throw new SparError("not_found", `no exposed workload card ${params.file}`);
      return json(200, workloadCard(workload, cardOptions(request, server)));
    })
    .post(
      "/a2a",
      // A call may wait on its turn (or stream) longer than the idle timeout: the guard lifts it
      // while the handler runs (connection-deadlines.ts).
      ({ body, caller }) => answer(options, caller, body),
      { parse: "json" },
    );
}

/** One JSON-RPC call: its answer (a JSON response or the stream), every refusal as a JSON-RPC error. */
async function answer(options: A2aListenerOptions, caller: Caller, body: unknown): Promise<Response> {
  const missing = missingScopes(
    caller,
    options.workloads.flatMap((workload) => workload.a2a.auth.scopes),
  );
  if (missing.length > 0)
    throw new SparError("forbidden", `the token lacks the scopes ${missing.join(", ")} this skill declares`, {
      missing_scopes: missing,
    });
  // A2A defines no batches: one error response with id null, as JSON-RPC 2.0 answers an invalid request.
  if (Array.isArray(body))
    return rpcError(
      null,
      new SparError("bad_request", "batch requests are not served: send one JSON-RPC request per call"),
      -32600,
    );
  const envelope = v.safeParse(JsonRpcRequest, body);
  const id = requestId(body);
  if (!envelope.success) return rpcError(id, new SparError("bad_request", envelope.issues[0].message), -32600);
  const { method, params } = envelope.output;
  try {
    if (!METHODS.has(method)) return rpcError(id, new SparError("method_not_allowed", `no method ${method}`));
    if (method === "tasks/get") return rpcResult(id, await options.tasks.get(caller, taskId(params)));
    if (method === "tasks/cancel") return rpcResult(id, await options.tasks.cancel(caller, taskId(params)));
    if (method === "tasks/resubscribe") {
      const task = await options.tasks.find(caller, taskId(params));
      const release = admitStream(options, caller);
      return jsonRpcStream(id, (emit) => options.tasks.follow(task, caller, emit), release);
    }
    const send = sendParams(params);
    admitSend(options, caller);
    if (send.message.taskId === undefined)
      routeSkill(options.workloads, skillSelector(send.message.metadata, send.metadata));
    if (method === "message/send")
      return rpcResult(id, await options.tasks.run(await options.tasks.prepare(caller, send.message)));
    // A stream past the caps is refused before its task is minted.
    const release = admitStream(options, caller);
    let prepared: Awaited<ReturnType<A2aTasks["prepare"]>>;
    try {
      prepared = await options.tasks.prepare(caller, send.message);
    } catch (error) {
      release();
      throw error;
    }
    return jsonRpcStream(id, (emit) => options.tasks.run(prepared, emit), release);
  } catch (error) {
    return rpcError(id, error);
  }
}

/** One open stream for `caller` within the daemon's caps (a retryable 429 past them); its release. */
function admitStream(options: A2aListenerOptions, caller: Caller): () => void {
  return options.streams?.admit(caller) ?? (() => {});
}

/** Sends are refused while draining and beyond the caller's rate (both retryable). */
function admitSend(options: A2aListenerOptions, caller: Caller): void {
  if (options.tasks.draining)
    throw new SparError("shutting_down", "the daemon is draining: retry against its successor");
  const workload = options.workloads[0]?.name ?? "";
  const decision = options.limiter?.take(`${caller.identity}|${workload}`);
  if (decision !== undefined && !decision.allowed)
    throw new SparError("too_many_requests", "rate limited: slow down", {
      retry_after_seconds: decision.retryAfterSeconds,
    });
}

function sendParams(params: unknown) {
  const parsed = v.safeParse(MessageSendParams, params);
  if (!parsed.success) throw new SparError("bad_request", `invalid params: ${parsed.issues[0].message}`);
  return parsed.output;
}

function taskId(params: unknown): string {
  const parsed = v.safeParse(TaskIdParams, params);
  if (!parsed.success) throw new SparError("bad_request", `invalid params: ${parsed.issues[0].message}`);
  return parsed.output.id;
}

function requestId(body: unknown): RequestIdValue {
  const id = typeof body === "object" && body !== null ? (body as { id?: unknown }).id : undefined;
  return typeof id === "string" || typeof id === "number" ? id : null;
}

function rpcResult(id: RequestIdValue, result: unknown): Response {
  return json(200, { jsonrpc: "2.0", id, result });
}

function rpcError(id: RequestIdValue, error: unknown, code?: number): Response {
  const wire = jsonRpcError(error);
  const retryAfter = retryAfterOf(error);
  return json(
    200,
    { jsonrpc: "2.0", id, error: { ...wire, ...(code === undefined ? {} : { code }) } },
    retryAfter === undefined ? {} : { "retry-after": String(retryAfter) },
  );
}
