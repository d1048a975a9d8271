/**
 * The pure parts of the dispatch shapes: reading a bounded reply as JSON, the fan-out's bounded
 * concurrency and its synthesis request, a result as a question shows it, and the result an
 * inject's run recorded.
 */
import { describe, expect, test } from "bun:test";
import type { SessionEvent } from "../../../../src/core/events.ts";
import { parseReply } from "../../../../src/svc/dispatch/bounded-dispatch.ts";
import { dispatchResultOf } from "../../../../src/svc/dispatch/dispatch-result.ts";
import { shownResult } from "../../../../src/svc/dispatch/dispatch-step.ts";
import { inBatches, synthesisRequest } from "../../../../src/svc/dispatch/fanout-dispatch.ts";

describe("a bounded reply", () => {
  test("is one JSON object, bare or in one code fence", () => {
    expect(parseReply(' {"severity":"low"} ')).toEqual({ value: { severity: "low" } });
    expect(parseReply('```json\n{"severity":"high"}\n```')).toEqual({ value: { severity: "high" } });
  });

  test("empty, prose, or JSON that is not an object is a problem naming why", () => {
    expect(parseReply("")).toEqual({ problem: "the reply is empty, not JSON" });
    expect(parseReply("high")).toMatchObject({ problem: expect.stringContaining("the reply is not JSON") });
    expect(parseReply("[1]")).toMatchObject({ problem: expect.stringContaining("not an object") });
  });
});

describe("fan-out", () => {
  test("inBatches runs at most `limit` at once and keeps the items' order", async () => {
    let running = 0;
    let most = 0;
    const outcomes = await inBatches([30, 10, 20, 5, 15], 2, async (delay) => {
      running++;
      most = Math.max(most, running);
      await Bun.sleep(delay); // time under test: items that take different times
      running--;
      return delay * 2;
    });
    expect(outcomes).toEqual([60, 20, 40, 10, 30]);
    expect(most).toBe(2);
  });

  test("the synthesis request carries the incident and every analyst's report or why it has none", () => {
    const text = synthesisRequest("INJECT {}", [
      { analyst: "logs", reported: true, result: { result: "errors at 10:02" } },
      { analyst: "metrics", reported: false, error: "specialist metrics: the turn failed" },
    ]);
    expect(text).toBe(
      [
        "INJECT {}",
        "",
        "ANALYST REPORTS (1 of 2 analysts reported):",
        '- logs: {"result":"errors at 10:02"}',
        "- metrics: no report (specialist metrics: the turn failed)",
        "",
        "Merge the reports into one.",
      ].join("\n"),
    );
  });
});

test("a result in a question is compact JSON, cut at 1,000 characters", () => {
  expect(shownResult({ result: "ok" })).toBe('{"result":"ok"}');
  const long = shownResult({ result: "x".repeat(2000) });
  expect(long).toHaveLength(1001);
  expect(long.endsWith("…")).toBe(true);
});

test("the result of an inject's run is the dispatch-result row of the execution that drained its prompt", () => {
  const header = (invocationId: string, id: string) => ({ id, ts: "t", invocationId, author: "a" });
  const rows: SessionEvent[] = [
    { ...header("i1", "1"), kind: "user-message", text: "first", promptIds: ["p1"] },
    { ...header("i1", "2"), kind: "audit", name: "dispatch-result", metadata: { specialist: "a", result: { n: 1 } } },
    { ...header("i2", "3"), kind: "user-message", text: "second", promptIds: ["p2"] },
    {
      ...header("i2", "4"),
      kind: "audit",
      name: "dispatch-result",
      metadata: { specialist: "judge", valid: false, reply: "no" },
    },
  ];
  expect(dispatchResultOf(rows, "p1")).toEqual({ specialist: "a", output: { n: 1 } });
  expect(dispatchResultOf(rows, "p2")).toBeUndefined();
  expect(dispatchResultOf(rows, "p3")).toBeUndefined();
});
