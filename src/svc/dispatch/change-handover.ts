/**
 * The hand-over of an approved change (docs/svc.md#approving-a-result-hitlrequire_approval: under
 * graph, the workload's `capability: change_executor` specialist carries out an approved
 * `proposed_change`). When an operator approves a routed specialist's result (`approve-<name>`) and
 * that result carries a `proposed_change`, the workload's change executor runs on it next. Pure:
 * which approved change is still to be handed over is read from the coordinator session's rows (the
 * result question with its result, the approving answer, and the `dispatch-handover` row written
 * before the executor runs, so a change is handed over once, after a restart too) and the request
 * the executor is given.
 */
import type { SessionEvent } from "../../core/events.ts";
import { RESULT_ANSWER_ROW, RESULT_QUESTION_ROW } from "./result-approval.ts";

export const HANDOVER_ROW = "dispatch-handover";

/** The context key marking a run as the change executor's (its result is not asked about again). */
export const HANDOVER_FROM = "handover_from";

/** An approved change not handed over yet. */
export interface PendingHandover {
  /** The answered result question (`approve-<specialist>`). */
  interruptId: string;
  /** The specialist that proposed it. */
  from: string;
  change: unknown;
  approver?: string;
  note?: string;
}

/** The `proposed_change` of a result; undefined when it has none (absent, null, empty). */
export function proposedChange(result: Record<string, unknown>): unknown {
  const change = result.proposed_change;
  if (change === undefined || change === null || change === "") return undefined;
  if (Array.isArray(change) && change.length === 0) return undefined;
  if (typeof change === "object" && !Array.isArray(change) && Object.keys(change).length === 0) return undefined;
  return change;
}

/** The first approved change of the session's rows that has no hand-over row after its approval. */
export function pendingHandover(events: readonly SessionEvent[]): PendingHandover | undefined {
  const asked = new Map<string, { from: string; change: unknown }>();
  const due = new Map<string, PendingHandover>();
  for (const event of events) {
    if (event.kind !== "audit") continue;
    const id = event.metadata.interrupt_id;
    if (typeof id !== "string") continue;
    if (event.name === RESULT_QUESTION_ROW) {
      const result = event.metadata.result;
      const change = isRecord(result) ? proposedChange(result) : undefined;
      due.delete(id);
      if (change === undefined) asked.delete(id);
      else asked.set(id, { from: String(event.metadata.agent), change });
    } else if (event.name === RESULT_ANSWER_ROW) {
      const question = asked.get(id);
      asked.delete(id);
      if (question === undefined || event.metadata.approved !== true) continue;
      const { approver, note } = event.metadata;
      due.set(id, {
        interruptId: id,
        ...question,
        ...(typeof approver === "string" ? { approver } : {}),
        ...(typeof note === "string" ? { note } : {}),
      });
    } else if (event.name === HANDOVER_ROW) due.delete(id);
  }
  return due.values().next().value;
}

/** What the change executor is asked to do: the approved change, who approved it, and nothing wider. */
export function handoverRequest(handover: PendingHandover): string {
  const approval = [
    `approved by ${handover.approver ?? "an operator"}`,
    ...(handover.note === undefined ? [] : [`note: ${handover.note}`]),
  ].join("; ");
  return [
    `Carry out this change, proposed by ${handover.from} and ${approval}.`,
    "Make exactly this change and nothing wider; every mutating call is still asked about before it runs.",
    `proposed_change: ${JSON.stringify(handover.change)}`,
  ].join("\n");
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
