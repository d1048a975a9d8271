/**
 * The operator's controls behind svc's main listener: abort and guardrail reset of a session, and
 * the draining check, each one call into the runtime core's SessionService (the same runtime
 * operations the attach surface uses; nothing of them is svc's own), and POST /stop, handed to the
 * daemon's shutdown.
 */
import type { SessionService, SessionTarget } from "../runtime/session-service.ts";
import type { ResetOutcome } from "../runtime/session-guards.ts";
import type { AbortRequest } from "./listener/abort-route.ts";
import type { GuardrailResetRequest } from "./listener/guardrails-route.ts";
import type { MainListenerControls } from "./listener/main-listener.ts";
import type { StopRequest } from "./listener/stop-route.ts";
import { verifiedIdentity } from "../surfaces/attach/route-context.ts";

/** Aborts every session of an incident (OperatorActions.abort: coordinator and specialists, pauses voided). */
export type IncidentAbort = (sessionId: string, caller: AbortRequest["caller"], reason: string) => Promise<void>;

export class SessionControls implements MainListenerControls {
  readonly #sessions: SessionService;
  readonly #abortIncident: IncidentAbort | undefined;
  readonly #stop: (request: StopRequest) => number;

  /** `stop` starts the daemon's drain and answers its window in ms; without `abortIncident` an abort is the coordinator session's alone. */
  constructor(sessions: SessionService, stop: (request: StopRequest) => number, abortIncident?: IncidentAbort) {
    this.#sessions = sessions;
    this.#stop = stop;
    this.#abortIncident = abortIncident;
  }

  stop(request: StopRequest): number {
    return this.#stop(request);
  }

  refuseWhileDraining(): void {
    this.#sessions.refuseWhileDraining();
  }

  async abort(request: AbortRequest): Promise<void> {
    if (this.#abortIncident) return this.#abortIncident(request.sessionId, request.caller, request.reason);
    await this.#sessions.abort(target(request.sessionId), request.caller, request.reason);
  }

  resetGuardrails(request: GuardrailResetRequest): Promise<ResetOutcome> {
    return this.#sessions.resetGuardrails(
      target(request.sessionId),
      request.caller,
      request.request,
      verifiedIdentity(request.caller),
    );
  }
}

function target(sessionId: string): SessionTarget {
  return { app: undefined, sid: sessionId };
}
