/**
 * Wake loops, pure (D360-D363): schedule, result and alert arguments, the fold of a session's
 * loop rows (pending wake, membership), the wake prompt, and a schedule ending its turn for
 * auto-continue's cut-turn finder.
 */
import { describe, expect, test } from "bun:test";
import { findCutTurn } from "../../../src/core/auto-continue.ts";
import type { CommittedRow, SessionEvent } from "../../../src/core/events.ts";
import {
  LOOP_ALERT,
  WAKE_FIRED,
  WAKE_LOOP_AUTHOR,
  WAKE_SCHEDULED,
  foldWakeLoop,
  parseAlert,
  parseResult,
  parseSchedule,
  wakeIdempotencyKey,
  wakePrompt,
} from "../../../src/core/wake-loop.ts";

const NOW = new Date("2026-11-28T12:00:00.000Z");

describe("parseSchedule", () => {
  test("a delay or an RFC 3339 time, within 1 s and 7 days", () => {
    expect(parseSchedule({ delay_seconds: 90, reason: "poll" }, NOW)).toEqual({
      ok: true,
      value: { at: "2026-11-28T12:01:30.000Z", reason: "poll" },
    });
    expect(parseSchedule({ at: "2026-11-28T13:00:00+01:00" }, NOW).ok).toBe(false);
    expect(parseSchedule({ at: "2026-11-28T14:00:00+01:00" }, NOW)).toEqual({
      ok: true,
      value: { at: "2026-11-28T13:00:00.000Z", reason: "" },
    });
    expect(parseSchedule({ delay_seconds: 7 * 86_400 }, NOW).ok).toBe(true);
  });

  test("refusals name what was wrong", () => {
    const error = (args: Record<string, unknown>) => {
      const parsed = parseSchedule(args, NOW);
      return parsed.ok ? "" : parsed.error;
    };
    expect(error({})).toContain("exactly one of");
    expect(error({ at: "2027-01-01T00:00:00Z", delay_seconds: 5 })).toContain("exactly one of");
    expect(error({ at: "2026-11-28T11:59:59Z" })).toContain("in the past");
    expect(error({ at: "tomorrow" })).toContain("RFC 3339");
    expect(error({ delay_seconds: "5" })).toContain("must be a number");
    expect(error({ delay_seconds: 0.5 })).toContain("at least 1 second");
    expect(error({ delay_seconds: 7 * 86_400 + 1 })).toContain("at most 7 days");
    expect(error({ delay_seconds: 5, reason: 3 })).toContain("`reason`");
  });
});

test("parseResult and parseAlert", () => {
  expect(parseResult({ result: "done" })).toEqual({ ok: true, value: "done" });
  expect(parseResult({ result: " " }).ok).toBe(false);
  expect(parseResult({}).ok).toBe(false);
  expect(parseAlert({ severity: "critical", summary: "down" })).toEqual({
    ok: true,
    value: { severity: "critical", summary: "down" },
  });
  expect(parseAlert({ severity: "loud", summary: "x" }).ok).toBe(false);
  expect(parseAlert({ severity: "info", summary: "" }).ok).toBe(false);
  expect(parseAlert({ severity: "info", summary: "x", detail: 1 }).ok).toBe(false);
  expect(parseResult({ result: "x".repeat(5000) })).toMatchObject({ ok: true, value: expect.stringMatching(/…$/) });
});

let seq = 0;
const row = (event: Record<string, unknown>): CommittedRow => ({
  seq: ++seq,
  event: { id: `e${seq}`, ts: NOW.toISOString(), ...event } as SessionEvent,
});
const loopRow = (name: string, metadata: Record<string, unknown>, invocationId = "wake-loop") =>
  row({ invocationId, author: WAKE_LOOP_AUTHOR, kind: "audit", name, metadata });

describe("foldWakeLoop", () => {
  test("no loop rows: no loop, nothing pending", () => {
    expect(foldWakeLoop([])).toEqual({ isLoop: false });
  });

  test("the latest schedule is pending until its own wake-fired row", () => {
    const first = { id: "s1", at: "2026-11-28T13:00:00.000Z", reason: "a" };
    const second = { id: "s2", at: "2026-11-28T14:00:00.000Z", reason: "b" };
    const rows = [loopRow(WAKE_SCHEDULED, first), loopRow(WAKE_SCHEDULED, second)];
    expect(foldWakeLoop(rows)).toEqual({ isLoop: true, pending: second });
    // The replaced schedule's firing (it cannot, but a stray row) does not clear the latest.
    expect(foldWakeLoop([...rows, loopRow(WAKE_FIRED, { id: "s1" })])).toEqual({ isLoop: true, pending: second });
    expect(foldWakeLoop([...rows, loopRow(WAKE_FIRED, { id: "s2" })])).toEqual({ isLoop: true });
    // Other loop rows and other authors change nothing.
    const other = row({
      invocationId: "x",
      author: "attach/interrupt",
      kind: "audit",
      name: WAKE_SCHEDULED,
      metadata: first,
    });
    expect(foldWakeLoop([other, loopRow(LOOP_ALERT, { severity: "info", summary: "s" })])).toEqual({ isLoop: false });
  });
});

test("the wake prompt names the schedule; its idempotency key is the schedule's", () => {
  const wake = { id: "0190", at: "2026-11-28T13:00:00.000Z", reason: "poll" };
  expect(wakePrompt(wake)).toBe("[scheduled wake 0190, due 2026-11-28T13:00:00.000Z]: poll");
  expect(wakePrompt({ ...wake, reason: "" })).toBe("[scheduled wake 0190, due 2026-11-28T13:00:00.000Z]");
  expect(wakeIdempotencyKey(wake)).toBe("wake-loop:0190");
});

test("a turn that ended on a schedule was not cut (auto-continue leaves it)", () => {
  const prompt = row({ invocationId: "t1", author: "user", kind: "user-message", text: "go", promptIds: [] });
  const response = row({
    invocationId: "t1",
    author: "spar",
    kind: "model-response",
    model: "m",
    text: "",
    toolCalls: [{ callId: "c1", name: "schedule_next_turn", args: { delay_seconds: 5 } }],
    turnComplete: true,
    finishReason: "stop",
    usage: { inputTokens: 0, outputTokens: 0 },
    cost: { costUsd: 0 },
  });
  expect(findCutTurn([prompt, response])?.interruption).toBe("t1");
  const scheduled = loopRow(WAKE_SCHEDULED, { id: "s", at: "2026-11-28T13:00:00.000Z", reason: "" }, "t1");
  expect(findCutTurn([prompt, response, scheduled])).toBeUndefined();
  const alert = loopRow(LOOP_ALERT, { severity: "info", summary: "s" }, "t1");
  expect(findCutTurn([prompt, response, alert])?.interruption).toBe("t1");
});
