/**
 * The coordinator's delegations that wait on an operator, folded from its rows: a
 * `gate-delegation` row is written with the stand-in result of a specialist call whose run parked
 * on an approval (naming the specialist and the interrupt ids it waits on); a
 * `gate-delegation-done` row when the specialist's result was handed to the coordinator. Pure.
 */
import type { SessionEvent } from "../../core/events.ts";

export const DELEGATION_ROW = "gate-delegation";
export const DELEGATION_DONE_ROW = "gate-delegation-done";

export interface OpenDelegation {
  callId: string;
  specialist: string;
  interruptIds: string[];
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
      });
    }
    if (row.name === DELEGATION_DONE_ROW) open.delete(callId);
  }
  return [...open.values()];
}
