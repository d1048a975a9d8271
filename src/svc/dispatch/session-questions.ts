/**
 * SessionQuestions: the questions an incident session waits on, and POST /resume's answers to
 * them. Two kinds: a specialist's parked mutating call (its write gate; answered with a verdict,
 * then the session's next turn carries the verdict out) and a dispatch shape's result question
 * (`approve-<specialist>`, result-approval.ts; answered and recorded; an approved change is
 * handed to graph's change executor, change-handover.ts). The state a
 * session reports (`paused`, `ambiguous`, `idle`) is read from those rows alone.
 */
import type { CallsFirst } from "./calls-first.ts";
import type { AckEffectsRequest } from "../listener/listener-port.ts";
import { SparError } from "../../core/errors.ts";
import { failpoint } from "../../runtime/failpoint.ts";
import type { SessionTarget } from "../../runtime/session-service.ts";
import type { Caller } from "../../surfaces/http/caller-auth.ts";
import type {
  PendingQuestion,
  ResumeOutcome,
  ResumeRequest,
  SessionState,
  SessionStatus,
} from "../listener/listener-port.ts";
import type { AnswerOutcome, WriteGate } from "../gate/write-gate.ts";
import type { ResultApprovals } from "./result-approval.ts";

/** The attach surface's `pause_reason` of a session that waits on an operator's answer (D342). */
export const AWAITING_APPROVAL = "awaiting_approval";

/** Where the questions are read from and what runs after an answer (SvcRuntime). */
export interface QuestionSources {
  readonly coordinatorApp: string;
  /** The write gates of the session's specialists that exist. */
  gatesOf(sessionId: string): Promise<WriteGate[]>;
  /** The result questions of the coordinator session (dispatch shapes; undefined otherwise). */
  approvalsOf(sessionId: string): Promise<ResultApprovals | undefined>;
  /** Throws unless `caller` may write to the session. */
  authorize(target: SessionTarget, caller: Caller): Promise<void>;
  /** Run the session's next turn (it carries the answer out) and resolve once it has ended or parked. */
  runOn(target: SessionTarget, caller: Caller): Promise<unknown>;
  /** Approved calls run before the turns after the answers (a burst of approvals). */
  readonly callsFirst: CallsFirst;
  /** Whether approving this result hands a change on (graph's change executor runs next). */
  handsOver(result: Record<string, unknown>): boolean;
}

export class SessionQuestions {
  readonly #sources: QuestionSources;

  constructor(sources: QuestionSources) {
    this.#sources = sources;
  }

  /** The session's state as its gate and result rows say, and the questions it waits on. */
  async status(sessionId: string): Promise<SessionStatus> {
    const { pending, ambiguous } = await this.#open(sessionId);
    const state: SessionState = pending.length > 0 ? "paused" : ambiguous ? "ambiguous" : "idle";
    return { state, pending: pending.map(({ question }) => question) };
  }

  /** When the oldest question the session waits on was asked; undefined when none waits (D342). */
  async waitingSince(sessionId: string): Promise<string | undefined> {
    const { pending } = await this.#open(sessionId);
    return oldest(pending.map(({ askedAt }) => askedAt));
  }

  /** The open questions of the session (results first, then each specialist's gate) and whether a call is ambiguous. */
  async #open(
    sessionId: string,
  ): Promise<{ pending: Array<{ question: PendingQuestion; askedAt: string }>; ambiguous: boolean }> {
    const pending: Array<{ question: PendingQuestion; askedAt: string }> = [];
    const approvals = await this.#sources.approvalsOf(sessionId);
    for (const question of (await approvals?.ledger())?.pending() ?? [])
      pending.push({
        question: { interrupt_id: question.interruptId, agent: question.agent, message: question.message },
        askedAt: question.askedAt,
      });
    let ambiguous = false;
    for (const gate of await this.#sources.gatesOf(sessionId)) {
      const ledger = await gate.ledger();
      for (const { call } of ledger.pending())
        pending.push({
          question: { interrupt_id: call.interruptId, agent: call.agent, message: call.message },
          askedAt: call.parkedAt,
        });
      ambiguous ||= ledger.state() === "ambiguous";
    }
    return { pending, ambiguous };
  }

  /** A session that waits on an operator refuses a new incident (409) naming the questions to answer first. */
  async refuseWhileWaiting(sessionId: string): Promise<void> {
    const { pending } = await this.status(sessionId);
    if (pending.length === 0) return;
    throw new SparError(
      "conflict",
      `session ${JSON.stringify(sessionId)} waits on ${pending.map((question) => question.interrupt_id).join(", ")}: answer with POST /resume before injecting again`,
      { state: "paused", pending },
    );
  }

  /** POST /ack-effects: acknowledge the ambiguous calls of the session's specialists, durably. */
  async ackEffects(request: AckEffectsRequest): Promise<SessionStatus & { acknowledged: number }> {
    const target: SessionTarget = { app: this.#sources.coordinatorApp, sid: request.sessionId };
    await this.#sources.authorize(target, request.caller);
    let acknowledged = 0;
    for (const gate of await this.#sources.gatesOf(request.sessionId))
      acknowledged += await gate.acknowledge(request.reason, request.caller.identity);
    return { acknowledged, ...(await this.status(request.sessionId)) };
  }

  /** POST /resume: answer a question of the session (or of one of its specialists), then run the session on. */
  async resume(request: ResumeRequest): Promise<ResumeOutcome> {
    const target: SessionTarget = { app: this.#sources.coordinatorApp, sid: request.sessionId };
    await this.#sources.authorize(target, request.caller);
    const gate = await this.#gateHolding(request.sessionId, request.interruptId);
    if (gate === undefined) {
      const approvals = await this.#sources.approvalsOf(request.sessionId);
      if (approvals !== undefined && (await approvals.ledger()).entry(request.interruptId) !== undefined)
        return this.#answerResult(approvals, request);
    }
    const outcome: AnswerOutcome = gate
      ? await gate.answer(request.interruptId, request.response, approverOf(request.caller))
      : { kind: "unknown" };
    switch (outcome.kind) {
      case "unknown":
        throw unknownQuestion(request);
      case "malformed":
        throw new SparError("bad_request", `invalid verdict: ${outcome.detail}`, { outcome: "malformed_verdict" });
      case "answered":
        throw answeredBefore(request, outcome.outcome, outcome.decidedAt);
      case "refused":
        throw new SparError("bad_request", `${outcome.outcome}: ${outcome.detail}`, {
          outcome: outcome.outcome,
          state: "paused",
        });
      case "resolved": {
        // The answered call runs now; the agents' turns after it hear how it went.
        if (gate !== undefined) await this.#sources.callsFirst.call(() => gate.settleNow());
        await this.#sources.callsFirst.turnsMayRun();
        await this.#sources.runOn(target, request.caller);
        const status = await this.status(request.sessionId);
        // An edit the gate refused answers the question (the call never runs; the agent is told) but is an error to its sender.
        if (REFUSED_EDITS.has(outcome.outcome))
          throw new SparError(
            "bad_request",
            `${outcome.outcome}: ${outcome.detail ?? "refused"}; the call was refused outright and the agent told`,
            { outcome: outcome.outcome, ...status },
          );
        return {
          outcome: outcome.outcome,
          ...status,
          ...(outcome.detail === undefined ? {} : { detail: outcome.detail }),
        };
      }
    }
  }

  /**
   * Answer a result question: recorded; when the approval hands a change on, the session runs on
   * (the change executor's run) before the answer, as after a write-gate verdict.
   */
  async #answerResult(approvals: ResultApprovals, request: ResumeRequest): Promise<ResumeOutcome> {
    const outcome = await approvals.answer(request.interruptId, request.response, approverOf(request.caller));
    if (outcome.kind === "answered") throw answeredBefore(request, outcome.outcome, outcome.decidedAt);
    if (outcome.kind === "unknown") throw unknownQuestion(request);
    const result = (await approvals.ledger()).entry(request.interruptId)?.question.result ?? {};
    if (outcome.outcome === "result_approved" && this.#sources.handsOver(result)) {
      failpoint("svc.result.before-handover");
      const target: SessionTarget = { app: this.#sources.coordinatorApp, sid: request.sessionId };
      await this.#sources.runOn(target, request.caller);
    }
    return { outcome: outcome.outcome, ...(await this.status(request.sessionId)) };
  }

  async #gateHolding(sessionId: string, interruptId: string): Promise<WriteGate | undefined> {
    for (const gate of await this.#sources.gatesOf(sessionId)) {
      if ((await gate.ledger()).entry(interruptId) !== undefined) return gate;
    }
    return undefined;
  }
}

/** The earliest of RFC 3339 times (they sort as text); undefined for none. */
export function oldest(times: readonly string[]): string | undefined {
  return [...times].sort()[0];
}

function unknownQuestion(request: ResumeRequest): SparError {
  return new SparError(
    "not_found",
    `session ${JSON.stringify(request.sessionId)} has no question with interrupt id ${JSON.stringify(request.interruptId)}`,
  );
}

function answeredBefore(request: ResumeRequest, outcome: string, decidedAt: string): SparError {
  return new SparError(
    "conflict",
    `interrupt ${request.interruptId} was already answered (${outcome} at ${decidedAt}): nothing changed`,
    { outcome },
  );
}

/** Outcomes of an edit the gate refused on its own (the four checks). */
const REFUSED_EDITS: ReadonlySet<string> = new Set(["edit_unattributed", "edit_refused", "denied_by_policy"]);

/** The approver of a verdict: the authenticated caller; undefined without authentication. */
function approverOf(caller: Caller): string | undefined {
  return caller.source === "anonymous" ? undefined : caller.identity;
}
