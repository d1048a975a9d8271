/**
 * svc's AG-UI listener (`--agui-listen`; docs/svc-agui.md#endpoints, #tokens,
 * #refusals-decided-before-the-stream-opens):
 * `GET /agui/agents.json`, the public discovery descriptor (our own, AG-UI has none), and the
 * exposed workload's `endpoint_path`, which takes a `RunAgentInput` and answers an AG-UI SSE run
 * stream (agui-runs.ts, agui-events.ts). Built on the shared guards (guardedApp): the Host check,
 * the bearer `SVC_AGUI_TOKEN` (the secret or an HS256 JWT signed with it; protocol-bearer.ts,
 * 401), the browser origins allowed cross-origin (cors-policy.ts; none by default), CSRF, the body
 * limit. Before the stream opens: the workload's `auth.scopes` (403), the per caller and workload
 * token bucket (429 with `Retry-After`), the draining daemon (503), then every refusal of the run.
 */
import { Elysia } from "elysia";
import { SparError } from "../../core/errors.ts";
import { validate } from "../../surfaces/http/request-body.ts";
import type { AllowedOrigins } from "../../surfaces/http/cors-policy.ts";
import { guardedApp } from "../../surfaces/http/guarded-app.ts";
import type { HostAllowlist } from "../../surfaces/http/host-allowlist.ts";
import { missingScopes, protocolCaller } from "../../surfaces/http/protocol-bearer.ts";
import { type RateLimit, RateLimiter } from "../../surfaces/http/rate-limiter.ts";
import type { StreamAdmission } from "../../surfaces/http/stream-admission.ts";
import { json } from "../../surfaces/http/responses.ts";
import { withCaller } from "../../surfaces/http/with-caller.ts";
import type { Workload } from "../workload/workload.ts";
import { type AguiEvent, sseFrame } from "./agui-events.ts";
import type { AguiRuns } from "./agui-runs.ts";
import { RunAgentInputSchema } from "./run-input.ts";

/** The discovery descriptor's path (public). */
export const AGENTS_PATH = "/agui/agents.json";
/** A run's input carries the thread's messages: up to 1 MiB. */
const RUN_BODY_LIMIT = 1024 * 1024;
const WRITE_LIMIT = 8 * 1024;

export interface AguiListenerOptions {
  workload: Workload;
  runs: AguiRuns;
  /** `SVC_AGUI_TOKEN`; undefined: no authentication (loopback binds only). */
  secret: string | undefined;
  /** `SVC_AGUI_RATE` / `_BURST`; undefined: no limit. */
  rate: RateLimit | undefined;
  /** Throws the 503 while the daemon drains. */
  refuseWhileDraining(): void;
  /** The Hosts served without a token (DNS rebinding); undefined with a token. */
  allowedHosts?: HostAllowlist;
  /** `--agui-allowed-origins`: browser origins allowed cross-origin. */
  allowedOrigins?: AllowedOrigins;
  /** The daemon's open-stream caps: each run's stream holds one (D334). */
  streams?: StreamAdmission;
  /** Seconds a client may send nothing (the listener's Bun.serve `idleTimeout`; connection-deadlines.ts). */
  idleTimeoutSeconds?: number;
}

/** The discovery entry of the workload, when it is exposed. */
export function agentsDescriptor(workload: Workload) {
  const agui = workload.agui;
  if (!agui.expose) return [];
  return [
    {
      name: workload.name,
      endpoint: agui.endpointPath,
      description: agui.description ?? workload.description ?? "",
      input_schema: agui.inputSchema ?? { type: "object" },
      auth: { scopes: agui.auth.scopes },
    },
  ];
}

export function aguiListenerApp(options: AguiListenerOptions) {
  const { workload } = options;
  const endpoint = workload.agui.endpointPath;
  if (endpoint === AGENTS_PATH) throw new Error(`agui.endpoint_path must not be ${AGENTS_PATH}`);
  const limiter = options.rate ? new RateLimiter(options.rate) : undefined;
  const app = guardedApp({
    transport: {
      token: undefined,
      readonly: false,
      ...(options.allowedHosts ? { allowedHosts: options.allowedHosts } : {}),
    },
    resolveCaller: (request) =>
      protocolCaller(request, { secret: options.secret, label: "agui", identity: "svc-agui" }),
    publicPaths: new Set([AGENTS_PATH]),
    bodyLimit: (pathname) => (pathname === endpoint ? RUN_BODY_LIMIT : WRITE_LIMIT),
    ...(options.allowedOrigins ? { allowedOrigins: options.allowedOrigins } : {}),
    ...(options.idleTimeoutSeconds ? { idleTimeoutSeconds: options.idleTimeoutSeconds } : {}),
  }).get(AGENTS_PATH, () => json(200, agentsDescriptor(workload)));
  if (!workload.agui.expose) return app;
  return app.use(
    new Elysia({ name: "svc.agui-run" }).use(withCaller).post(
      endpoint,
      async ({ body, caller }) => {
        const missing = missingScopes(caller, workload.agui.auth.scopes);
        if (missing.length > 0)
          throw new SparError("forbidden", `the token lacks the scopes ${missing.join(", ")} of ${workload.name}`, {
            missing_scopes: missing,
          });
        const decision = limiter?.take(`${caller.identity}|${workload.name}`);
        if (decision !== undefined && !decision.allowed)
          throw new SparError("too_many_requests", `rate limit of ${workload.name} reached for ${caller.identity}`, {
            retry_after_seconds: decision.retryAfterSeconds,
          });
        options.refuseWhileDraining();
        const checked = validate(RunAgentInputSchema, body);
        if (!checked.ok) throw checked.error;
        // A stream past the caps is refused before its run is prepared.
        const release = options.streams?.admit(caller) ?? (() => {});
        try {
          return eventStream(options.runs.stream(await options.runs.prepare(checked.value, caller)), release);
        } catch (error) {
          release();
          throw error;
        }
      },
      { parse: "json" },
    ),
  );
}

/** The run's events as `text/event-stream`, closed after the terminal frame; `onEnd` once, at its end. */
function eventStream(events: AsyncGenerator<AguiEvent>, onEnd: () => void): Response {
  const encoder = new TextEncoder();
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    onEnd();
  };
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      let next: IteratorResult<AguiEvent>;
      try {
        next = await events.next();
      } catch (error) {
        end();
        throw error;
      }
      if (next.done) {
        end();
        controller.close();
        return;
      }
      controller.enqueue(encoder.encode(sseFrame(next.value)));
    },
    async cancel() {
      end();
      await events.return(undefined);
    },
  });
  return new Response(body, {
    status: 200,
    headers: { "content-type": "text/event-stream", "cache-control": "no-store", "x-accel-buffering": "no" },
  });
}
