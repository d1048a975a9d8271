import { describe, expect, test } from "bun:test";
import type { AuditEvent } from "../../../../src/core/events.ts";
import {
  HANDOVER_ROW,
  handoverRequest,
  pendingHandover,
  proposedChange,
} from "../../../../src/svc/dispatch/change-handover.ts";
import { RESULT_ANSWER_ROW, RESULT_QUESTION_ROW } from "../../../../src/svc/dispatch/result-approval.ts";

const CHANGE = [{ tool: "apply_change", arguments: { replicas: 5 } }];

function row(name: string, metadata: Record<string, unknown>): AuditEvent {
  return {
    kind: "audit",
    id: `e-${name}`,
    ts: "2026-11-26T10:00:00.000Z",
    invocationId: "i",
    author: "svc/dispatch",
    name,
    metadata,
  } as AuditEvent;
}

const asked = (result: Record<string, unknown>) =>
  row(RESULT_QUESTION_ROW, { interrupt_id: "approve-diagnoser", agent: "diagnoser", result });
const answered = (approved: boolean) =>
  row(RESULT_ANSWER_ROW, { interrupt_id: "approve-diagnoser", approved, approver: "alice", note: "go" });
const handedOver = row(HANDOVER_ROW, { interrupt_id: "approve-diagnoser" });

describe("change hand-over", () => {
  test("an approved result with a proposed_change is due, with who approved it", () => {
    expect(pendingHandover([asked({ proposed_change: CHANGE }), answered(true)])).toEqual({
      interruptId: "approve-diagnoser",
      from: "diagnoser",
      change: CHANGE,
      approver: "alice",
      note: "go",
    });
  });

  test("nothing is due once handed over, when rejected, unanswered, or without a change", () => {
    expect(pendingHandover([asked({ proposed_change: CHANGE }), answered(true), handedOver])).toBeUndefined();
    expect(pendingHandover([asked({ proposed_change: CHANGE }), answered(false)])).toBeUndefined();
    expect(pendingHandover([asked({ proposed_change: CHANGE })])).toBeUndefined();
    expect(pendingHandover([asked({ result: "fine" }), answered(true)])).toBeUndefined();
  });

  test("a question asked again under its fixed id needs its own approval; an old hand-over does not cover it", () => {
    const again = [asked({ proposed_change: CHANGE }), answered(true), handedOver, asked({ proposed_change: CHANGE })];
    expect(pendingHandover(again)).toBeUndefined();
    expect(pendingHandover([...again, answered(true)])?.interruptId).toBe("approve-diagnoser");
  });

  test("empty changes are no change; the request quotes the change and its approval", () => {
    for (const empty of [null, "", [], {}]) expect(proposedChange({ proposed_change: empty })).toBeUndefined();
    const text = handoverRequest({
      interruptId: "approve-diagnoser",
      from: "diagnoser",
      change: CHANGE,
      approver: "alice",
    });
    expect(text).toContain("proposed by diagnoser and approved by alice");
    expect(text).toContain('proposed_change: [{"tool":"apply_change","arguments":{"replicas":5}}]');
  });
});
