/**
 * The write gate's rows and records: the interrupt row of a question, the `gate-audit` row of each
 * adjudication (a resolving one carries its decision record: verdict, scope, authority,
 * disposition, approver, note, executed arguments), the intent and effect rows of a call that
 * runs, the JSON Lines audit record, and what the model reads for each outcome. Builders only.
 */
import type { AuditEvent, ToolCall } from "../../core/events.ts";
import type { ToolRunResult } from "../../core/tool-catalog.ts";
import type { Journal } from "../../runtime/session-journal.ts";
import type { AuditRecord } from "./audit-log.ts";
import { callKey } from "./call-key.ts";
import {
  ACK_ROW,
  AUDIT_ROW,
  type AuditOutcome,
  EFFECT_ROW,
  GATE_AUTHOR,
  type GateEntry,
  INTENT_ROW,
  INTERRUPT_ROW,
  type ParkedCall,
} from "./gate-ledger.ts";
import type { Judgement } from "./verdict.ts";

const REJECTED =
  "The operator rejected this call. Do not retry it, and do not try to reach the same change by another route.";

/** A decision record's `disposition`: what the daemon did with the call. */
export function disposition(outcome: AuditOutcome): "authorized" | "refused_by_operator" | "refused_by_mast" {
  if (outcome === "apply" || outcome === "edit_applied" || outcome === "approved_by_change_set") return "authorized";
  return outcome === "denied_by_operator" ? "refused_by_operator" : "refused_by_mast";
}

export class GateRows {
  readonly #journal: Journal;
  readonly #agent: string;
  readonly #sessionId: string;
  readonly #ownName: (tool: string) => string;

  constructor(journal: Journal, agent: string, sessionId: string, ownName: (tool: string) => string) {
    this.#journal = journal;
    this.#agent = agent;
    this.#sessionId = sessionId;
    this.#ownName = ownName;
  }

  ackRow(interruptIds: string[], reason: string, by: string): AuditEvent {
    return {
      ...this.#journal.header("gate-ack", GATE_AUTHOR),
      kind: "audit",
      name: ACK_ROW,
      metadata: { interrupt_ids: interruptIds, reason, by },
    };
  }

  intentRow(invocationId: string, interruptId: string, idempotencyKey: string, call: ToolCall): AuditEvent {
    return {
      ...this.#journal.header(invocationId, GATE_AUTHOR),
      kind: "audit",
      name: INTENT_ROW,
      metadata: { interrupt_id: interruptId, idempotency_key: idempotencyKey, tool: call.name, args: call.args },
    };
  }

  interruptRow(
    turnId: string,
    interruptId: string,
    call: ToolCall,
    key: string,
    message: string,
    extra: Record<string, unknown>,
  ): AuditEvent {
    return {
      ...this.#journal.header(turnId, GATE_AUTHOR),
      kind: "audit",
      name: INTERRUPT_ROW,
      metadata: {
        interrupt_id: interruptId,
        call_id: call.callId,
        tool: call.name,
        args: call.args,
        key,
        agent: this.#agent,
        message,
        ...extra,
      },
    };
  }
  auditRow(
    turnId: string,
    outcome: AuditOutcome,
    interruptId: string | undefined,
    call: ToolCall,
    key: string,
    extra: Record<string, unknown>,
  ): AuditEvent {
    return {
      ...this.#journal.header(turnId, GATE_AUTHOR),
      kind: "audit",
      name: AUDIT_ROW,
      metadata: {
        interrupt_id: interruptId,
        outcome,
        call_id: call.callId,
        tool: call.name,
        key,
        agent: this.#agent,
        ...extra,
      },
    };
  }

  verdictRow(
    call: ParkedCall,
    judgement: Exclude<Judgement, { kind: "malformed" }>,
    approver: string | undefined,
  ): AuditEvent {
    const metadata: Record<string, unknown> = {
      interrupt_id: call.interruptId,
      outcome: judgement.outcome,
      call_id: call.callId,
      tool: call.tool,
      key: call.key,
      args: call.args,
      agent: call.agent,
    };
    if (approver !== undefined) metadata.approver = approver;
    if (judgement.detail !== undefined) metadata.detail = judgement.detail;
    if (judgement.kind === "resolved") {
      metadata.verdict = judgement.verdict;
      metadata.authority = "operator_verdict";
      metadata.disposition = disposition(judgement.outcome);
      if (judgement.scope !== undefined) metadata.scope = judgement.scope;
      if (judgement.note !== undefined) metadata.note = judgement.note;
      if (judgement.runArgs !== undefined) metadata.run_args = judgement.runArgs;
      if (judgement.verdict === "edit" && judgement.runArgs !== undefined)
        metadata.executed_key = callKey(this.#ownName(call.tool), judgement.runArgs);
    }
    return { ...this.#journal.header("gate-verdict", GATE_AUTHOR), kind: "audit", name: AUDIT_ROW, metadata };
  }

  changeSetApproved(call: ParkedCall, grants: number, approver: string | undefined): AuditEvent {
    const metadata: Record<string, unknown> = {
      interrupt_id: call.interruptId,
      outcome: "change_set_approved",
      call_id: call.callId,
      tool: call.tool,
      key: call.key,
      agent: call.agent,
      grants,
      detail: `${grants} change-set grant(s) minted`,
    };
    if (approver !== undefined) metadata.approver = approver;
    return { ...this.#journal.header("gate-verdict", GATE_AUTHOR), kind: "audit", name: AUDIT_ROW, metadata };
  }
  effectRow(invocationId: string, interruptId: string, result: ToolRunResult & { ran: boolean }): AuditEvent {
    return {
      ...this.#journal.header(invocationId, GATE_AUTHOR),
      kind: "audit",
      name: EFFECT_ROW,
      metadata: { interrupt_id: interruptId, ran: result.ran, output: result.output, is_error: result.isError },
    };
  }

  record(
    outcome: AuditOutcome,
    call: ToolCall,
    key: string,
    extra: { interruptId?: string; detail?: string },
  ): AuditRecord {
    return {
      outcome,
      tool: call.name,
      call: key,
      agent: this.#agent,
      session: this.#sessionId,
      function_call_id: call.callId,
      ...(extra.interruptId === undefined ? {} : { interrupt_id: extra.interruptId }),
      ...(extra.detail === undefined ? {} : { detail: extra.detail }),
    };
  }
}

export function verdictRecord(
  sessionId: string,
  call: ParkedCall,
  judgement: Exclude<Judgement, { kind: "malformed" }>,
  approver: string | undefined,
): AuditRecord {
  return {
    outcome: judgement.outcome,
    tool: call.tool,
    call: call.key,
    agent: call.agent,
    session: sessionId,
    function_call_id: call.callId,
    interrupt_id: call.interruptId,
    ...(judgement.detail === undefined ? {} : { detail: judgement.detail }),
    ...(approver === undefined ? {} : { approver }),
    ...(judgement.kind === "resolved" && judgement.note !== undefined ? { note: judgement.note } : {}),
  };
}

/** What the model reads for a call the operator (or the gate, judging the answer) refused. */
export function refusalOutput(entry: GateEntry): ToolRunResult {
  const resolution = entry.resolution;
  const output: Record<string, unknown> = {
    error: resolution?.outcome ?? "denied_by_operator",
    detail: resolution?.outcome === "denied_by_operator" ? REJECTED : `${resolution?.detail ?? "refused"}. ${REJECTED}`,
  };
  if (resolution?.note !== undefined) output.operator_note = resolution.note;
  if (resolution?.approver !== undefined) output.approver = resolution.approver;
  return { output, isError: true };
}

/** The prompt line telling the model what became of a parked call. */
export function gateNotice(entry: GateEntry, result: ToolRunResult & { ran: boolean }): Record<string, unknown> {
  const resolution = entry.resolution;
  const notice: Record<string, unknown> = {
    interrupt_id: entry.call.interruptId,
    call_id: entry.call.callId,
    call: entry.call.key,
    verdict: resolution?.outcome,
  };
  if (result.ran) {
    notice.detail =
      resolution?.outcome === "edit_applied"
        ? "the operator edited the call's arguments; the edited call ran once"
        : "the operator approved the call; it ran once";
    if (resolution?.runArgs !== undefined) notice.args = resolution.runArgs;
    if (resolution?.note !== undefined) notice.operator_note = resolution.note;
  }
  notice.result = result.output;
  notice.is_error = result.isError;
  return notice;
}

export function ambiguousRefusal(dangling: readonly GateEntry[]): ToolRunResult {
  return {
    output: {
      error: "ambiguous_prior_effect",
      detail:
        "an earlier approved call was cut off while it ran, so whether it took effect is unknown: mutating calls are refused until an operator acknowledges it (ack-effects) or aborts the session; read-only work may go on",
      dangling_calls: dangling.map(
        (entry) =>
          `${entry.call.tool} (call ${entry.call.callId}, interrupt ${entry.call.interruptId}, ${entry.call.parkedAt})`,
      ),
    },
    isError: true,
  };
}
