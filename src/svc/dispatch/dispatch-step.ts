/**
 * DispatchStep: one execution of a dispatch shape on the workload's coordinator session, and what
 * every shape does in it: run a specialist as its own session (through SpecialistRuns, the same
 * path as a coordinator's delegation), record the shape's rows (`dispatch-route`, `dispatch-branch`,
 * `dispatch-result`) on the coordinator's journal, park the last specialist's run on the write
 * gate like a delegation (its `gate-delegation` row carries what the shape needs to go on), and
 * end with the result, asked about (`approve-<specialist>`) when `hitl.require_approval` is set.
 */
import type { AuditEvent, SessionEvent } from "../../core/events.ts";
import type { TurnOutcome } from "../../runtime/channel.ts";
import type { ExecutorSession } from "../../runtime/executor.ts";
import type { DispatchShape } from "../workload/workload.ts";
import type { AgentProfile, AgentRoster } from "./agent-roster.ts";
import { HANDOVER_FROM } from "./change-handover.ts";
import { delegationRow } from "./delegation-ledger.ts";
import type { ResultApprovals } from "./result-approval.ts";
import { UNUSABLE_REPLY } from "./session-turns.ts";
import type { SpecialistRun } from "./specialist-result.ts";

export const DISPATCH_ROUTE_ROW = "dispatch-route";
export const DISPATCH_BRANCH_ROW = "dispatch-branch";
export const DISPATCH_RESULT_ROW = "dispatch-result";

/** What a dispatch shape asks of svc's runtime (SvcRuntime). */
export interface DispatchAgents {
  readonly roster: AgentRoster;
  readonly shape: DispatchShape;
  /** `hitl.require_approval`: the last specialist's result parks as a question. */
  readonly requireApproval: boolean;
  runSpecialist(sessionId: string, profile: AgentProfile, request: string): Promise<SpecialistRun>;
  carryOnSpecialist(sessionId: string, profile: AgentProfile): Promise<SpecialistRun | undefined>;
  approvalsFor(session: ExecutorSession): ResultApprovals;
  events(session: ExecutorSession): Promise<SessionEvent[]>;
  logError(message: string): void;
}

/** The question asked about a shape's result (graph and fanout rows of docs/svc.md#questions). */
export type QuestionText = (
  specialist: string,
  result: Record<string, unknown>,
  context: Record<string, unknown>,
) => string;

/** What one shape does with an incident. */
export interface ShapeRunner {
  /** Run the shape on the incident's text; resolves with how the execution ended. */
  run(incident: string, step: DispatchStep): Promise<TurnOutcome>;
  /** The question asked about the shape's result (when the workload requires approval). */
  readonly question: QuestionText;
  /** Whether approving `result` hands a change on (graph's change executor). */
  handsOver?(result: Record<string, unknown>): boolean;
  /** Carry an approved change on (a bare wake after the approval); undefined when none is due. */
  handover?(events: readonly SessionEvent[], step: DispatchStep): Promise<TurnOutcome | undefined>;
}

/** How long a result may be inside a question's message; the whole result is in the row. */
const MESSAGE_RESULT_LIMIT = 1000;

/** A result as a question's message shows it: compact JSON, cut at 1,000 characters. */
export function shownResult(result: Record<string, unknown>): string {
  const text = JSON.stringify(result);
  return text.length <= MESSAGE_RESULT_LIMIT ? text : `${text.slice(0, MESSAGE_RESULT_LIMIT)}…`;
}

export class DispatchStep {
  readonly session: ExecutorSession;
  readonly agents: DispatchAgents;
  readonly invocationId: string;
  readonly signal: AbortSignal;

  constructor(session: ExecutorSession, agents: DispatchAgents, invocationId: string, signal: AbortSignal) {
    this.session = session;
    this.agents = agents;
    this.invocationId = invocationId;
    this.signal = signal;
  }

  get sessionId(): string {
    return this.session.key.id;
  }

  /** A dispatch row of this execution, authored by the workload's coordinator (readers find the workload by it). */
  row(name: string, metadata: Record<string, unknown>): AuditEvent {
    const author = this.agents.roster.coordinator.name;
    return { ...this.session.journal.header(this.invocationId, author), kind: "audit", name, metadata };
  }

  async record(name: string, metadata: Record<string, unknown>): Promise<void> {
    await this.session.journal.append([this.row(name, metadata)]);
  }

  /** Run a specialist; a failed run rejects with an error naming it. */
  async specialist(profile: AgentProfile, request: string): Promise<SpecialistRun> {
    try {
      return await this.agents.runSpecialist(this.sessionId, profile, request);
    } catch (error) {
      throw new Error(`specialist ${profile.name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /**
   * Run the shape's last specialist: its result ends the execution (asked about when the workload
   * requires approval); a run parked on the write gate waits as a delegation, with `context`.
   */
  async last(
    profile: AgentProfile,
    request: string,
    context: Record<string, unknown>,
    question: QuestionText,
  ): Promise<TurnOutcome> {
    const run = await this.specialist(profile, request);
    if (run.kind === "parked") {
      await this.session.journal.append([
        delegationRow(this.session, this.invocationId, this.delegationId(), profile.name, run.interruptIds, context),
      ]);
      return { status: "completed" };
    }
    return this.finish(profile.name, run.result, context, question);
  }

  /** The call id of this execution's delegation rows. */
  delegationId(): string {
    return `dispatch-${this.invocationId}`;
  }

  /**
   * Record the shape's result, with its question when the workload requires approval (not for the
   * change executor's: the change was approved, and each of its writes was asked about).
   */
  async finish(
    specialist: string,
    result: Record<string, unknown>,
    context: Record<string, unknown>,
    question: QuestionText,
    extra: readonly AuditEvent[] = [],
  ): Promise<TurnOutcome> {
    const rows = [
      ...extra,
      this.row(DISPATCH_RESULT_ROW, { shape: this.agents.shape, specialist, result, ...context }),
    ];
    if (!this.agents.requireApproval || context[HANDOVER_FROM] !== undefined) {
      await this.session.journal.append(rows);
      return { status: "completed" };
    }
    const approvals = this.agents.approvalsFor(this.session);
    const asked = approvals.questionRow(this.invocationId, specialist, question(specialist, result, context), result);
    await this.session.journal.append([...rows, asked]);
    await approvals.committed([asked]);
    return { status: "completed" };
  }
}

/** The execution failed because a model's reply could not be used (answered 502). */
export function unusableReply(message: string): TurnOutcome {
  return { status: "failed", message, code: UNUSABLE_REPLY };
}
