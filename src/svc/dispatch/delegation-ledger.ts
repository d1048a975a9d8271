/**
 * The coordinator's delegations that wait on an operator, folded from its rows: a
 * `gate-delegation` row is written with the stand-in result of a specialist call whose run parked
 * on an approval (naming the specialist and the interrupt ids it waits on); a
 * `gate-delegation-done` row when the specialist's result was handed to the coordinator. A
 * dispatch shape writes the same rows (its `context` says how to go on). Pure but for the rows'
 * headers, which the session's journal makes.
 */
import type { AuditEvent, SessionEvent } from "../../core/events.ts";
import type { ExecutorSession } from "../../runtime/executor.ts";
import { GATE_AUTHOR } from "../gate/gate-ledger.ts";

export const DELEGATION_ROW = "gate-delegation";
export const DELEGATION_DONE_ROW = "gate-delegation-done";

export interface OpenDelegation {
  callId: string;
  specialist: string;
  interruptIds: string[];
  /** What a dispatch shape recorded to go on with once the specialist reports. */
  context: Record<string, unknown>;
}

export function openDelegations(rows: readonly SessionEvent[]): OpenDelegation[] {
  const open = new Map<string, OpenDelegation>();
  for (const row of rows) {
    if (row.kind !== "audit") continue;
    const callId = row.metadata.call_id;
    if (typeof callId !== "string") continue;
    if (row.name === DELEGATION_ROW) {
      const ids = row.metadata.interrupt_ids;
      open.set(callId, {
        callId,
        specialist: String(row.metadata.specialist),
        interruptIds: Array.isArray(ids) ? ids.map(String) : [],
        context: isRecord(row.metadata.context) ? row.metadata.context : {},
      });
    }
    if (row.name === DELEGATION_DONE_ROW) open.delete(callId);
  }
  return [...open.values()];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The row of a delegation that waits on an operator (written with the parked call's stand-in result). */
export function delegationRow(
  session: ExecutorSession,
  invocationId: string,
  callId: string,
  specialist: string,
  interruptIds: string[],
  context?: Record<string, unknown>,
): AuditEvent {
  return {
    ...session.journal.header(invocationId, GATE_AUTHOR),
    kind: "audit",
    name: DELEGATION_ROW,
    metadata: { call_id: callId, specialist, interrupt_ids: interruptIds, ...(context ? { context } : {}) },
  };
}

/** The row that closes a delegation: the specialist's result was handed on. */
export function delegationDoneRow(
  session: ExecutorSession,
  invocationId: string,
  callId: string,
  specialist: string,
): AuditEvent {
  return {
    ...session.journal.header(invocationId, GATE_AUTHOR),
    kind: "audit",
    name: DELEGATION_DONE_ROW,
    metadata: { call_id: callId, specialist },
  };
}
