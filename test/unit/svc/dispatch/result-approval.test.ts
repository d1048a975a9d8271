/**
 * Result questions folded from rows (result-approval.ts): a question stays pending until its
 * answer row, only `true` or `{approved: true}` approves, and a question asked again under its
 * fixed id after an answer is pending again.
 */
import { describe, expect, test } from "bun:test";
import type { AuditEvent, CommittedRow } from "../../../../src/core/events.ts";
import {
  RESULT_ANSWER_ROW,
  RESULT_QUESTION_ROW,
  ResultLedger,
  judgeResultResponse,
  resultInterruptId,
} from "../../../../src/svc/dispatch/result-approval.ts";

let seq = 0;
function row(name: string, metadata: Record<string, unknown>): CommittedRow {
  seq++;
  const event: AuditEvent = {
    id: `e${seq}`,
    ts: `2026-01-01T00:00:0${seq % 10}Z`,
    invocationId: "i",
    author: "svc/dispatch",
    kind: "audit",
    name,
    metadata,
  };
  return { seq, event } as CommittedRow;
}

const asked = (agent: string) =>
  row(RESULT_QUESTION_ROW, { interrupt_id: resultInterruptId(agent), agent, message: `Approve ${agent}?` });
const answered = (agent: string, approved: boolean) =>
  row(RESULT_ANSWER_ROW, { interrupt_id: resultInterruptId(agent), approved });

describe("result ledger", () => {
  test("a question is pending until its answer row; the first answer stands", () => {
    const ledger = ResultLedger.fold([asked("disk_full")]);
    expect(ledger.pending().map((question) => question.interruptId)).toEqual(["approve-disk_full"]);
    ledger.apply(answered("disk_full", true).event);
    ledger.apply(answered("disk_full", false).event);
    expect(ledger.pending()).toEqual([]);
    expect(ledger.entry("approve-disk_full")?.answer?.approved).toBe(true);
  });

  test("a question asked again under its fixed id after an answer is pending again", () => {
    const ledger = ResultLedger.fold([asked("_synthesis"), answered("_synthesis", false), asked("_synthesis")]);
    expect(ledger.pending().map((question) => question.agent)).toEqual(["_synthesis"]);
  });

  test("an answer to no question changes nothing", () => {
    const ledger = ResultLedger.fold([answered("ghost", true)]);
    expect(ledger.entry("approve-ghost")).toBeUndefined();
  });
});

describe("judging a result answer (reference 3.5 b)", () => {
  test("a literal true or approved: true approves, with its note", () => {
    expect(judgeResultResponse(true)).toEqual({ approved: true });
    expect(judgeResultResponse({ approved: true, note: "ok" })).toEqual({ approved: true, note: "ok" });
  });

  test("anything else rejects: false, a string true, a write-gate verdict, an array, null", () => {
    for (const response of [false, { approved: "true" }, { verdict: "approve" }, [true], null, "yes", 1])
      expect(judgeResultResponse(response).approved).toBe(false);
  });
});
