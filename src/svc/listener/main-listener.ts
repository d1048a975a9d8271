/**
 * svc's main listener (`--listen`): `POST /inject` runs the incident envelope as a turn on its
 * session and answers 202 once the turn has finished or parked, `POST /resume` (resume-route.ts),
 * `POST /pause` and `/extend-token` (pause-route.ts), `POST /ack-effects`, `POST /abort` (abort-route.ts),
 * `POST /sessions/{id}/guardrails/reset` (guardrails-route.ts), `POST /stop` (stop-route.ts), `GET /metrics` the Prometheus
 * text, `GET /healthz`; while the daemon drains every write is a 503 (draining-guard.ts). Built on the shared guards (guardedApp: Host check, the bearer token
 * `SVC_INJECT_TOKEN` compared in constant time, CSRF, the body limit, JSON errors), so it carries
 * no guard of its own. The daemon behind it is a port: the listener parses, calls one method and
 * encodes the answer.
 */
import { Elysia } from "elysia";
import * as v from "valibot";
import { type Caller, LOCAL_CALLER } from "../../surfaces/http/caller-auth.ts";
import { guardedApp } from "../../surfaces/http/guarded-app.ts";
import type { HostAllowlist } from "../../surfaces/http/host-allowlist.ts";
import { json } from "../../surfaces/http/responses.ts";
import { withCaller } from "../../surfaces/http/with-caller.ts";
import { type AbortPort, abortRoute } from "./abort-route.ts";
import { drainingGuard } from "./draining-guard.ts";
import { type GuardrailResetPort, guardrailsRoute } from "./guardrails-route.ts";
import { InjectEnvelope, incidentSessionId, injectMessage } from "./inject-envelope.ts";
import type { MainListenerPort } from "./listener-port.ts";
import { type TokenResumePort, resumeRoute } from "./resume-route.ts";
import { type PausePort, pauseRoutes } from "./pause-route.ts";
import { ackEffectsRoute } from "./ack-effects-route.ts";
import { type StopPort, stopRoute } from "./stop-route.ts";

/** The caller behind the shared inject token (docs/wire-compat.md#svcs-inherited-names). */
export const INJECT_CALLER: Caller = Object.freeze({ identity: "svc-inject", admin: false, source: "bearer" });

/** The operator's controls on svc's sessions, a port beside MainListenerPort. */
export interface MainListenerControls extends AbortPort, GuardrailResetPort, StopPort {
  /** Throws the 503 (SparError `shutting_down`) while the daemon drains. */
  refuseWhileDraining(): void;
}

export interface MainListenerOptions {
  port: MainListenerPort & TokenResumePort & PausePort;
  controls: MainListenerControls;
  /** `SVC_INJECT_TOKEN`; undefined: unauthenticated (loopback only, D228). */
  token: string | undefined;
  /** The Hosts served without a token (DNS rebinding); undefined with a token. */
  allowedHosts?: HostAllowlist;
  /** Seconds a client may send nothing (the listener's Bun.serve `idleTimeout`; connection-deadlines.ts). */
  idleTimeoutSeconds?: number;
}

export const PendingQuestionSchema = v.object({ interrupt_id: v.string(), agent: v.string(), message: v.string() });

export const InjectAnswer = v.object({
  status: v.literal("accepted"),
  session_id: v.string(),
  prompt_id: v.string(),
  state: v.picklist(["idle", "paused", "ambiguous"]),
  pending: v.array(PendingQuestionSchema),
  result: v.optional(v.object({ specialist: v.string(), output: v.record(v.string(), v.unknown()) })),
});

export function mainListenerApp(options: MainListenerOptions) {
  return guardedApp({
    transport: {
      token: options.token,
      readonly: false,
      tokenLabel: "inject",
      tokenSource: "the value of SVC_INJECT_TOKEN",
      ...(options.allowedHosts ? { allowedHosts: options.allowedHosts } : {}),
    },
    resolveCaller: () => (options.token === undefined ? LOCAL_CALLER : INJECT_CALLER),
    publicPaths: new Set(["/healthz"]),
    ...(options.idleTimeoutSeconds ? { idleTimeoutSeconds: options.idleTimeoutSeconds } : {}),
  })
    .use(drainingGuard(() => options.controls.refuseWhileDraining()))
    .use(mainRoutes(options.port))
    .use(resumeRoute(options.port))
    .use(pauseRoutes(options.port))
    .use(ackEffectsRoute(options.port))
    .use(abortRoute(options.controls))
    .use(guardrailsRoute(options.controls))
    .use(stopRoute(options.controls));
}

function mainRoutes(port: MainListenerPort) {
  return new Elysia({ name: "svc.main-routes" })
    .use(withCaller)
    .get("/healthz", () => json(200, { status: "ok" }))
    .get("/metrics", () => new Response(port.metrics(), { headers: { "content-type": "text/plain; version=0.0.4" } }))
    .post(
      "/inject",
      async ({ body, caller }) => {
        const sessionId = incidentSessionId(body);
        const outcome = await port.inject({ sessionId, message: injectMessage(body), caller });
        return json(202, {
          status: "accepted",
          session_id: sessionId,
          prompt_id: outcome.promptId,
          state: outcome.state,
          pending: outcome.pending,
          ...(outcome.result === undefined ? {} : { result: outcome.result }),
        });
      },
      { parse: "json", body: InjectEnvelope },
    );
}

/** The main listener's app type: the operator CLI's typed client (Eden treaty) is built on it. */
export type MainListenerApp = ReturnType<typeof mainListenerApp>;
