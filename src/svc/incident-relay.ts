/**
 * IncidentRelay: svc's main listener when several svc daemons share one database (D493). An
 * incident is served whole by the daemon holding its coordinator session's lease (D492); an
 * operator's request for it that reaches another daemon (an inject, an approval, an abort, a pause,
 * a token's resume or extension, a guardrail reset, an acknowledgement) is committed there and
 * run by the serving daemon through the same port, whose answer comes back (the runtime's relay,
 * D489). A request for an incident nobody serves is run here, which takes the incident over. A
 * resume token names its incident through the pause rows, so a daemon that has not seen it looks
 * it up in the store first. Owns no rule of its own: the inner port and controls decide everything.
 */
import type { SessionRelay } from "../runtime/session-relay.ts";
import type { ResetOutcome } from "../runtime/session-guards.ts";
import type { Caller } from "../surfaces/http/caller-auth.ts";
import type { AbortRequest } from "./listener/abort-route.ts";
import type { GuardrailResetRequest } from "./listener/guardrails-route.ts";
import type {
  AckEffectsRequest,
  InjectOutcome,
  InjectRequest,
  MainListenerPort,
  ResumeOutcome,
  ResumeRequest,
  SessionStatus,
} from "./listener/listener-port.ts";
import type { MainListenerControls } from "./listener/main-listener.ts";
import type { PausePort } from "./listener/pause-route.ts";
import type { TokenResumePort } from "./listener/resume-route.ts";
import type { StopRequest } from "./listener/stop-route.ts";
import type { PauseAnswer, PauseRequest, TokenResumeAnswer, TokenResumeRequest } from "./pause/session-pauses.ts";

type Port = MainListenerPort & TokenResumePort & PausePort;

/** An inject or an approval answers once its turn ended or parked: the relay waits as long as a turn may run. */
const TURN_WAIT_MS = 15 * 60_000;

export interface IncidentRelayDeps {
  relay: SessionRelay;
  coordinatorApp: string;
  port: Port;
  controls: MainListenerControls;
  /** The incident a resume token belongs to (404 when none does), looked up in the store when not known here. */
  tokenIncident(token: string): Promise<string>;
}

export class IncidentRelay implements Port, MainListenerControls {
  readonly #deps: IncidentRelayDeps;

  constructor(deps: IncidentRelayDeps) {
    this.#deps = deps;
    const { relay, port, controls } = deps;
    relay.registerOp("svc.inject", (args) => port.inject(args as InjectRequest));
    relay.registerOp("svc.resume", (args) => port.resume(args as ResumeRequest));
    relay.registerOp("svc.ack-effects", (args) => port.ackEffects(args as AckEffectsRequest));
    relay.registerOp("svc.pause", (args) => port.pause(args as PauseRequest));
    relay.registerOp("svc.token-resume", (args) => port.resumeByToken(args as TokenResumeRequest));
    relay.registerOp("svc.token-extend", (args) => {
      const { token, ttlMs, caller } = args as { token: string; ttlMs: number; caller: Caller };
      return port.extendToken(token, ttlMs, caller);
    });
    relay.registerOp("svc.abort", (args) => controls.abort(args as AbortRequest));
    relay.registerOp("svc.guardrails-reset", (args) => controls.resetGuardrails(args as GuardrailResetRequest));
  }

  #on<T>(sessionId: string, op: string, args: unknown, waitMs?: number): Promise<T> {
    const key = { app: this.#deps.coordinatorApp, id: sessionId };
    return this.#deps.relay.runOp(key, op, args, waitMs) as Promise<T>;
  }

  metrics(): string {
    return this.#deps.port.metrics();
  }

  inject(request: InjectRequest): Promise<InjectOutcome> {
    return this.#on(request.sessionId, "svc.inject", request, TURN_WAIT_MS);
  }

  resume(request: ResumeRequest): Promise<ResumeOutcome> {
    return this.#on(request.sessionId, "svc.resume", request, TURN_WAIT_MS);
  }

  ackEffects(request: AckEffectsRequest): Promise<SessionStatus & { acknowledged: number }> {
    return this.#on(request.sessionId, "svc.ack-effects", request);
  }

  pause(request: PauseRequest): Promise<PauseAnswer> {
    return this.#on(request.sessionId, "svc.pause", request);
  }

  async resumeByToken(request: TokenResumeRequest): Promise<TokenResumeAnswer> {
    return this.#on(await this.#deps.tokenIncident(request.token), "svc.token-resume", request);
  }

  async extendToken(token: string, ttlMs: number, caller: Caller): Promise<{ session_id: string; expires_at: string }> {
    return this.#on(await this.#deps.tokenIncident(token), "svc.token-extend", { token, ttlMs, caller });
  }

  abort(request: AbortRequest): Promise<void> {
    return this.#on(request.sessionId, "svc.abort", request);
  }

  resetGuardrails(request: GuardrailResetRequest): Promise<ResetOutcome> {
    return this.#on(request.sessionId, "svc.guardrails-reset", request);
  }

  stop(request: StopRequest): number {
    return this.#deps.controls.stop(request);
  }

  refuseWhileDraining(): void {
    this.#deps.controls.refuseWhileDraining();
  }
}
