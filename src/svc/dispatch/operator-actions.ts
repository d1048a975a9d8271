/**
 * OperatorActions: what an operator does to an incident through svc's listeners (main, A2A,
 * AG-UI): answer a question and run the session on (POST /resume), abort every session of the
 * incident (POST /abort), acknowledge its ambiguous calls (POST /ack-effects), and the refusal of
 * a new inject while a dispatch shape's session waits on an answer. Each checks the incident's
 * abort and gate pause first; the questions themselves are SessionQuestions'.
 */
import type { Caller } from "../../surfaces/http/caller-auth.ts";
import type { AckEffectsRequest, ResumeOutcome, ResumeRequest, SessionStatus } from "../listener/listener-port.ts";
import type { SessionPauses } from "../pause/session-pauses.ts";
import { ACK_ON_RESUME } from "./incident-pauses.ts";
import type { SessionQuestions } from "./session-questions.ts";
import type { SvcCore } from "./svc-core.ts";

export class OperatorActions {
  readonly #core: SvcCore;
  readonly #pauses: SessionPauses;
  readonly #questions: SessionQuestions;
  /** Whether the workload is a dispatch shape (its waiting sessions refuse injects). */
  readonly #dispatch: boolean;

  constructor(core: SvcCore, pauses: SessionPauses, questions: SessionQuestions, dispatch: boolean) {
    this.#core = core;
    this.#pauses = pauses;
    this.#questions = questions;
    this.#dispatch = dispatch;
  }

  /**
   * POST /resume: answer a question of the session (or of one of its specialists), then run the
   * session on. An aborted or gate-paused incident refuses it (409) before anything is recorded;
   * `ackEffects` acknowledges the incident's ambiguous calls first.
   */
  async resume(request: ResumeRequest): Promise<ResumeOutcome> {
    await this.#core.incident.refuseTurns(request.sessionId, request.caller, (id) => this.#pauses.refusal(id));
    if (request.ackEffects)
      await this.#questions.ackEffects({ sessionId: request.sessionId, reason: ACK_ON_RESUME, caller: request.caller });
    return this.#questions.resume(request);
  }

  /** POST /abort: the incident's every session, terminal; its pause tokens and timer void. */
  async abort(sessionId: string, caller: Caller, reason: string): Promise<void> {
    await this.#core.incident.abort(sessionId, caller, reason, (marker) => this.#pauses.voidPauses(sessionId, marker));
  }

  /** POST /ack-effects: acknowledge the ambiguous calls of the session's specialists, durably. */
  ackEffects(request: AckEffectsRequest): Promise<SessionStatus & { acknowledged: number }> {
    return this.#questions.ackEffects(request);
  }

  /** A dispatch shape's session that waits on an operator refuses a new inject (409). */
  async refuseWhileWaiting(sessionId: string): Promise<void> {
    if (this.#dispatch) await this.#questions.refuseWhileWaiting(sessionId);
  }
}
