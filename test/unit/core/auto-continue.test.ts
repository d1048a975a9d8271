import { expect, test } from "bun:test";
import {
  AUTO_CONTINUE_AUTHOR,
  type ContinueGuardInput,
  MAX_PER_SEQUENCE,
  continueRefusal,
  findCutTurn,
  isOutputCap,
  sequenceCount,
} from "../../../src/core/auto-continue.ts";
import type { CommittedRow, SessionEvent } from "../../../src/core/events.ts";
import { ZERO_USAGE } from "../../../src/core/usage.ts";

let seq = 0;
const row = (event: Record<string, unknown>): CommittedRow => ({
  seq: ++seq,
  event: { id: `r${seq}`, ts: `2026-11-22T00:00:0${seq % 10}Z`, ...event } as unknown as SessionEvent,
});
const prompt = (inv: string, author = "user") =>
  row({ kind: "user-message", author, invocationId: inv, text: "x", promptIds: [] });
const answer = (inv: string, tools: number) =>
  row({
    kind: "model-response",
    author: "spar",
    invocationId: inv,
    model: "m",
    text: "",
    toolCalls: Array.from({ length: tools }, (_, i) => ({ callId: `c${i}`, name: "t", args: {} })),
    turnComplete: true,
    finishReason: "stop",
    usage: ZERO_USAGE,
    cost: { costUsd: 0, costUsdUncachedReference: 0 },
  });
const audit = (author: string) => row({ kind: "audit", author, invocationId: "x", name: "n", metadata: {} });

test("a turn with no final answer and no ending row was cut by a restart", () => {
  expect(findCutTurn([])).toBeUndefined();
  expect(findCutTurn([prompt("t1"), answer("t1", 0)])).toBeUndefined();
  const cut = [prompt("t1"), answer("t1", 0), prompt("t2"), answer("t2", 1)];
  expect(findCutTurn(cut)).toEqual({ interruption: "t2", at: cut[3]?.event.ts ?? "" });
  expect(findCutTurn([prompt("t1")])?.interruption).toBe("t1");
  for (const ending of ["attach/interrupt", "gate/refusal-storm", "agent/guardrail-trip", "agent/turn-error"]) {
    expect(findCutTurn([prompt("t1"), answer("t1", 1), audit(ending)])).toBeUndefined();
  }
  expect(findCutTurn([prompt("t1"), answer("t1", 1), audit("gate/prompt")])?.interruption).toBe("t1");
});

test("the sequence counts trailing auto-continue prompts; a human prompt resets it", () => {
  expect(
    sequenceCount([prompt("a"), prompt("b", AUTO_CONTINUE_AUTHOR), answer("b", 0), prompt("c", AUTO_CONTINUE_AUTHOR)]),
  ).toBe(2);
  expect(sequenceCount([prompt("b", AUTO_CONTINUE_AUTHOR), prompt("h")])).toBe(0);
});

test("each guard refuses on its own", () => {
  const ok: ContinueGuardInput = {
    cause: "restart",
    ageMs: 1000,
    sequence: 0,
    bootCount: 0,
    sessionCount: 0,
    halted: false,
    turnInFlight: false,
    breakerOpen: false,
  };
  const limits = { freshnessMs: 60_000, maxPerBoot: 5, maxPerSession: 2 };
  expect(continueRefusal(ok, limits)).toBeUndefined();
  const cases: Array<[Partial<ContinueGuardInput>, string]> = [
    [{ halted: true }, "halted"],
    [{ turnInFlight: true }, "in flight"],
    [{ breakerOpen: true }, "crash-loop"],
    [{ ageMs: 60_001 }, "freshness"],
    [{ sequence: MAX_PER_SEQUENCE }, "sequence"],
    [{ sessionCount: 2 }, "per-session"],
    [{ bootCount: 5 }, "per-run"],
  ];
  for (const [change, words] of cases) expect(continueRefusal({ ...ok, ...change }, limits)).toContain(words);
  expect(continueRefusal({ ...ok, cause: "transient", breakerOpen: true }, limits)).toBeUndefined();
});

test("output-cap finish reasons in both spellings", () => {
  expect([isOutputCap("length"), isOutputCap("MAX_TOKENS"), isOutputCap("stop"), isOutputCap(undefined)]).toEqual([
    true,
    true,
    false,
    false,
  ]);
});
