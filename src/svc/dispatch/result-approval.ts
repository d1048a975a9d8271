/**
 * Result approval (docs/svc.md#approving-a-result-hitlrequire_approval, docs/svc.md#questions;
 * `hitl.require_approval` under graph and fanout dispatch): the result of a shape's last specialist
 * parks as a question with the fixed interrupt id `approve-<specialist>` until an operator answers
 * it. The second kind of question beside the write gate's, durable the same way: a
 * `result-question` row asks (with the result it is about), a `result-answer` row answers, and the
 * session reads `paused` from those rows alone. POST /resume answers with `{"approved": true}` (or
 * a literal `true`) to approve; anything else rejects. A result never triggers a call itself:
 * answering records the decision; an approved `proposed_change` is handed to graph's change
 * executor (change-handover.ts), whose writes are each asked about at the write gate.
 */
import type { AuditEvent, CommittedRow } from "../../core/events.ts";
import type { Journal } from "../../runtime/session-journal.ts";

export const RESULT_QUESTION_ROW = "result-question";
export const RESULT_ANSWER_ROW = "result-answer";
export const DISPATCH_AUTHOR = "svc/dispatch";

/** The response schema of a result question (docs/svc.md#questions). */
export const RESULT_RESPONSE_SCHEMA = Object.freeze({
  type: "object",
  properties: { approved: { type: "boolean" }, note: { type: "string" } },
  required: ["approved"],
});

/** The fixed interrupt id of a specialist's result question. */
export function resultInterruptId(specialist: string): string {
  return `approve-${specialist}`;
}

export interface ResultQuestion {
  interruptId: string;
  agent: string;
  message: string;
  askedAt: string;
  /** The result asked about. */
  result: Record<string, unknown>;
}

export interface ResultAnswer {
  approved: boolean;
  note?: string;
  approver?: string;
  decidedAt: string;
}

export interface ResultEntry {
  question: ResultQuestion;
  answer?: ResultAnswer;
}

/** The result questions of a coordinator session, folded from its rows. Pure. */
export class ResultLedger {
  readonly #entries = new Map<string, ResultEntry>();

  static fold(rows: readonly CommittedRow[]): ResultLedger {
    const ledger = new ResultLedger();
    for (const row of rows) ledger.apply(row.event);
    return ledger;
  }

  /** Fold one row; a question asked again under its fixed id replaces the answered one. */
  apply(row: CommittedRow["event"]): void {
    if (row.kind !== "audit") return;
    const id = row.metadata.interrupt_id;
    if (typeof id !== "string") return;
    if (row.name === RESULT_QUESTION_ROW) {
      this.#entries.set(id, {
        question: {
          interruptId: id,
          agent: String(row.metadata.agent),
          message: String(row.metadata.message),
          askedAt: row.ts,
          result: isRecord(row.metadata.result) ? row.metadata.result : {},
        },
      });
      return;
    }
    const entry = this.#entries.get(id);
    if (row.name !== RESULT_ANSWER_ROW || entry === undefined || entry.answer !== undefined) return;
    const meta = row.metadata;
    entry.answer = {
      approved: meta.approved === true,
      ...(typeof meta.note === "string" ? { note: meta.note } : {}),
      ...(typeof meta.approver === "string" ? { approver: meta.approver } : {}),
      decidedAt: row.ts,
    };
  }

  entry(interruptId: string): ResultEntry | undefined {
    return this.#entries.get(interruptId);
  }

  /** Questions nobody has answered yet. */
  pending(): ResultQuestion[] {
    return [...this.#entries.values()].filter((entry) => entry.answer === undefined).map((entry) => entry.question);
  }
}

/**
 * What an answer means: only `true` or an object with `approved: true` approves
 * (docs/svc.md#approving-a-result-hitlrequire_approval).
 */
export function judgeResultResponse(response: unknown): { approved: boolean; note?: string } {
  if (response === true) return { approved: true };
  if (typeof response !== "object" || response === null || Array.isArray(response)) return { approved: false };
  const fields = response as Record<string, unknown>;
  return {
    approved: fields.approved === true,
    ...(typeof fields.note === "string" ? { note: fields.note } : {}),
  };
}

export type ResultAnswerOutcome =
  | { kind: "unknown" }
  | { kind: "answered"; outcome: ResultOutcome; decidedAt: string }
  | { kind: "resolved"; outcome: ResultOutcome };

export type ResultOutcome = "result_approved" | "result_rejected";

const outcomeOf = (approved: boolean): ResultOutcome => (approved ? "result_approved" : "result_rejected");

export interface ResultApprovalsDeps {
  journal: Journal;
  readRows(): Promise<CommittedRow[]>;
}

/** The result questions of one coordinator session: asks (as rows to commit) and answers. */
export class ResultApprovals {
  readonly #deps: ResultApprovalsDeps;
  #ledger: Promise<ResultLedger> | undefined;
  /** One answer at a time: two answers to one question cannot both resolve it. */
  #chain: Promise<unknown> = Promise.resolve();

  constructor(deps: ResultApprovalsDeps) {
    this.#deps = deps;
  }

  ledger(): Promise<ResultLedger> {
    this.#ledger ??= this.#deps.readRows().then((rows) => ResultLedger.fold(rows));
    return this.#ledger;
  }

  /** The row asking about `agent`'s result; fold it with `committed` once it is. */
  questionRow(invocationId: string, agent: string, message: string, result: Record<string, unknown>): AuditEvent {
    return {
      ...this.#deps.journal.header(invocationId, DISPATCH_AUTHOR),
      kind: "audit",
      name: RESULT_QUESTION_ROW,
      metadata: {
        interrupt_id: resultInterruptId(agent),
        agent,
        message,
        response_schema: RESULT_RESPONSE_SCHEMA,
        result,
      },
    };
  }

  /** Fold rows this session committed (a question asked). */
  async committed(rows: readonly AuditEvent[]): Promise<void> {
    const ledger = await this.ledger();
    for (const row of rows) ledger.apply(row);
  }

  /** An operator's answer: recorded durably before this resolves. */
  answer(interruptId: string, response: unknown, approver: string | undefined): Promise<ResultAnswerOutcome> {
    const run = this.#chain.then(() => this.#answer(interruptId, response, approver));
    this.#chain = run.catch(() => undefined);
    return run;
  }

  async #answer(interruptId: string, response: unknown, approver: string | undefined): Promise<ResultAnswerOutcome> {
    const ledger = await this.ledger();
    const entry = ledger.entry(interruptId);
    if (entry === undefined) return { kind: "unknown" };
    if (entry.answer !== undefined)
      return { kind: "answered", outcome: outcomeOf(entry.answer.approved), decidedAt: entry.answer.decidedAt };
    const judged = judgeResultResponse(response);
    const row: AuditEvent = {
      ...this.#deps.journal.header("result-verdict", DISPATCH_AUTHOR),
      kind: "audit",
      name: RESULT_ANSWER_ROW,
      metadata: {
        interrupt_id: interruptId,
        agent: entry.question.agent,
        approved: judged.approved,
        outcome: outcomeOf(judged.approved),
        response: response ?? null,
        ...(judged.note === undefined ? {} : { note: judged.note }),
        ...(approver === undefined ? {} : { approver }),
      },
    };
    await this.#deps.journal.append([row]);
    ledger.apply(row);
    return { kind: "resolved", outcome: outcomeOf(judged.approved) };
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
