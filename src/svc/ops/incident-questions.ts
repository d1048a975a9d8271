/**
 * What `sessions show` tells about an incident's questions and edits, folded from its rows: each
 * pending question (interrupt id, the agent that asked, when, the message, its kind, the response
 * schema, a stale grant's reason, the change set it belongs to) and each operator edit that ran
 * (Proposed, Executed, Approver, Note). Pure.
 */
import { AUDIT_ROW, GateLedger, INTERRUPT_ROW } from "../gate/gate-ledger.ts";
import type { ChangeSetQuestion } from "../gate/change-set.ts";
import { RESULT_RESPONSE_SCHEMA, ResultLedger } from "../dispatch/result-approval.ts";
import { type Incident, incidentSessions } from "./incident.ts";

/** The response schema of a write-gate question (docs/svc.md#questions): `verdict` required, no `approver`. */
export const VERDICT_RESPONSE_SCHEMA = Object.freeze({
  type: "object",
  properties: {
    verdict: { type: "string", enum: ["approve", "reject", "edit"] },
    scope: { type: "string", enum: ["once", "change_set"] },
    args: { type: "object" },
    note: { type: "string" },
  },
  required: ["verdict"],
});

export interface PendingQuestion {
  interruptId: string;
  /** The agent that asked (the specialist, or the shape's specialist whose result is asked about). */
  agent: string;
  raisedAt: string;
  message: string;
  /** `write-gate`: a parked mutating call; `result`: a dispatch shape's result (D251). */
  kind: "write-gate" | "result";
  /** The model-facing tool of a parked call. */
  tool?: string;
  schema: Readonly<Record<string, unknown>>;
  /** Why a change-set grant no longer covered the call (the `Stale:` line, docs/svc.md#questions). */
  stale?: string;
  changeSet?: ChangeSetQuestion;
}

export interface EditRecord {
  at: string;
  agent: string;
  proposed: string;
  executed: string;
  approver?: string;
  note?: string;
}

/** Every question of the incident nobody has answered, oldest first. */
export function pendingQuestions(incident: Incident): PendingQuestion[] {
  const questions: PendingQuestion[] = ResultLedger.fold(incident.coordinator.rows)
    .pending()
    .map((question) => ({
      interruptId: question.interruptId,
      agent: question.agent,
      raisedAt: question.askedAt,
      message: question.message,
      kind: "result",
      schema: RESULT_RESPONSE_SCHEMA,
    }));
  for (const session of incidentSessions(incident)) {
    const stale = staleReasons(session.rows.map((row) => row.event));
    for (const entry of GateLedger.fold(session.rows).pending()) {
      const call = entry.call;
      const reason = stale.get(call.interruptId);
      questions.push({
        interruptId: call.interruptId,
        agent: call.agent,
        raisedAt: call.parkedAt,
        message: call.message,
        kind: "write-gate",
        tool: call.tool,
        schema: VERDICT_RESPONSE_SCHEMA,
        ...(reason === undefined ? {} : { stale: reason }),
        ...(call.changeSet === undefined ? {} : { changeSet: call.changeSet }),
      });
    }
  }
  return questions.sort((a, b) => Date.parse(a.raisedAt) - Date.parse(b.raisedAt));
}

/** Every operator edit that was applied (`edit_applied`), oldest first. */
export function editRecords(incident: Incident): EditRecord[] {
  const edits: EditRecord[] = [];
  for (const session of incidentSessions(incident)) {
    for (const { event } of session.rows) {
      if (event.kind !== "audit" || event.name !== AUDIT_ROW || event.metadata.outcome !== "edit_applied") continue;
      const meta = event.metadata;
      edits.push({
        at: event.ts,
        agent: String(meta.agent ?? ""),
        proposed: String(meta.key ?? ""),
        executed: String(meta.executed_key ?? ""),
        ...(typeof meta.approver === "string" ? { approver: meta.approver } : {}),
        ...(typeof meta.note === "string" ? { note: meta.note } : {}),
      });
    }
  }
  return edits.sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
}

function staleReasons(events: readonly Incident["coordinator"]["rows"][number]["event"][]): Map<string, string> {
  const reasons = new Map<string, string>();
  for (const event of events) {
    if (event.kind !== "audit" || event.name !== INTERRUPT_ROW) continue;
    const { interrupt_id: id, stale } = event.metadata;
    if (typeof id === "string" && typeof stale === "string") reasons.set(id, stale);
  }
  return reasons;
}
