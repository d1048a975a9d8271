/**
 * The ack-effects watermark (spec: ambiguous-effect; D257): an acknowledgement covers only the
 * calls whose intent was persisted before it; a call cut after it is ambiguous again.
 */
import { expect, test } from "bun:test";
import type { CommittedRow } from "../../../../src/core/events.ts";
import { ACK_ROW, AUDIT_ROW, GateLedger, INTENT_ROW, INTERRUPT_ROW } from "../../../../src/svc/gate/gate-ledger.ts";

let seq = 0;
function row(name: string, metadata: Record<string, unknown>): CommittedRow {
  seq++;
  return {
    seq,
    event: {
      id: `e${seq}`,
      ts: "2026-01-01T00:00:00Z",
      invocationId: "t",
      author: "svc/gate",
      kind: "audit",
      name,
      metadata,
    },
  } as CommittedRow;
}

const parked = (id: string) => row(INTERRUPT_ROW, { interrupt_id: id, call_id: `c-${id}`, tool: "apply_change" });
/** The approval, then the intent committed before the call ran (and no effect: the call was cut). */
const intent = (id: string) => [
  row(AUDIT_ROW, { interrupt_id: id, outcome: "apply" }),
  row(INTENT_ROW, { interrupt_id: id }),
];

test("an acknowledgement covers the intents persisted before it, not a call cut after it", () => {
  const before = [parked("g1"), ...intent("g1"), row(ACK_ROW, { interrupt_ids: ["g1"], reason: "checked", by: "op" })];
  expect(GateLedger.fold(before).ambiguous()).toEqual([]);
  expect(GateLedger.fold(before).state()).toBe("clear");
  const later = GateLedger.fold([...before, parked("g2"), ...intent("g2")]);
  expect(later.ambiguous().map((entry) => entry.call.interruptId)).toEqual(["g2"]);
  expect(later.state()).toBe("ambiguous");
});

test("without an acknowledgement every cut call is ambiguous", () => {
  const ledger = GateLedger.fold([parked("g3"), ...intent("g3"), parked("g4"), ...intent("g4")]);
  expect(ledger.ambiguous().map((entry) => entry.call.interruptId)).toEqual(["g3", "g4"]);
});
