/**
 * The daemon behind svc's main listener: an inject runs as a turn on its incident session (the
 * workload's coordinator; the session is created on its first inject, owned by the caller), and a
 * resume answers a parked question and runs the session on (SvcRuntime's OperatorActions). Both answer once their
 * turn has ended or parked, with the session's state as its gate and result rows say; an inject
 * also with the result a dispatch shape recorded. A dispatch shape's session that waits on an
 * operator refuses a new inject (409). Gate pauses and their tokens are SvcRuntime's SessionPauses.
 */
import type {
  InjectOutcome,
  InjectRequest,
  MainListenerPort,
  ResumeOutcome,
  ResumeRequest,
  SessionStatus,
} from "./listener/listener-port.ts";
import type { SvcRuntime } from "./dispatch/svc-runtime.ts";
import type { AckEffectsRequest } from "./listener/listener-port.ts";
import type { TokenResumePort } from "./listener/resume-route.ts";
import type { PausePort } from "./listener/pause-route.ts";
import type { PauseAnswer, PauseRequest, TokenResumeAnswer, TokenResumeRequest } from "./pause/session-pauses.ts";
import type { Caller } from "../surfaces/http/caller-auth.ts";

export class SessionInjectPort implements MainListenerPort, TokenResumePort, PausePort {
  readonly #runtime: SvcRuntime;
  readonly #metrics: () => string;

  constructor(runtime: SvcRuntime, metrics: () => string) {
    this.#runtime = runtime;
    this.#metrics = metrics;
  }

  metrics(): string {
    return this.#metrics();
  }

  async inject(request: InjectRequest): Promise<InjectOutcome> {
    await this.#runtime.operator.refuseWhileWaiting(request.sessionId);
    const run = await this.#runtime.turns.run(
      { app: this.#runtime.roster.coordinator.app, sid: request.sessionId },
      request.caller,
      request.message,
    );
    const result = await this.#runtime.queries.resultOf(request.sessionId, run.promptId);
    return {
      promptId: run.promptId,
      ...(await this.#runtime.queries.status(request.sessionId)),
      ...(result === undefined ? {} : { result }),
    };
  }

  resume(request: ResumeRequest): Promise<ResumeOutcome> {
    return this.#runtime.operator.resume(request);
  }

  ackEffects(request: AckEffectsRequest): Promise<SessionStatus & { acknowledged: number }> {
    return this.#runtime.operator.ackEffects(request);
  }

  pause(request: PauseRequest): Promise<PauseAnswer> {
    return this.#runtime.pauses.pause(request);
  }

  resumeByToken(request: TokenResumeRequest): Promise<TokenResumeAnswer> {
    return this.#runtime.pauses.resumeByToken(request);
  }

  extendToken(token: string, ttlMs: number, caller: Caller): Promise<{ session_id: string; expires_at: string }> {
    return this.#runtime.pauses.extend(token, ttlMs, caller);
  }
}
