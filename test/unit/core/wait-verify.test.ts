/**
 * wait_and_verify's pure rules (D467, D468): arguments read and clamped to the operator's ceilings,
 * which tools may be polled (poll_allow in either spelling, read-only in the catalog), what a poll
 * is matched against, the condition's text and last_result's cut. Plan-first's fold and refusal (D465).
 */
import { describe, expect, test } from "bun:test";
import {
  conditionHolds,
  conditionText,
  lastResultText,
  parseVerifyRequest,
  pollSubject,
  pollTarget,
  type PollTarget,
} from "../../../src/core/wait-verify.ts";
import { parsePlan, planFirstRefusal, planRecordedIn } from "../../../src/core/plan-gate.ts";
import type { CommittedRow } from "../../../src/core/events.ts";

const settings = {
  pollAllow: ["kube_get_resource", "kube__list_events", "kube_delete_pod"],
  maxTimeoutSeconds: 300,
  maxAttempts: 40,
};
const catalog: PollTarget[] = [
  { name: "kube__get_resource", server: "kube", readOnly: true },
  { name: "kube__list_events", server: "kube", readOnly: true },
  { name: "kube__describe", server: "kube", readOnly: true },
  { name: "kube__delete_pod", server: "kube", readOnly: false },
  { name: "read_file" },
];

describe("parseVerifyRequest", () => {
  test("defaults: args {}, interval 5 s, timeout 60 s, the operator's attempts; nothing clamped", () => {
    const read = parseVerifyRequest({ tool: "kube__get_resource", expect_contains: "Running" }, settings);
    expect(read).toEqual({
      ok: true,
      value: {
        tool: "kube__get_resource",
        args: {},
        expectContains: "Running",
        intervalSeconds: 5,
        timeoutSeconds: 60,
        maxAttempts: 40,
        clamped: [],
      },
    });
  });

  test("above the ceilings: clamped, each recorded with what was asked and why; an interval under 1 s raised", () => {
    const read = parseVerifyRequest(
      {
        tool: "t",
        args_json: '{"name":"web"}',
        expect_jq: ".ok",
        timeout_seconds: 900,
        max_attempts: 100,
        interval_seconds: 0.2,
      },
      settings,
    );
    if (!read.ok) throw new Error(read.error);
    expect(read.value).toMatchObject({
      args: { name: "web" },
      intervalSeconds: 1,
      timeoutSeconds: 300,
      maxAttempts: 40,
    });
    expect(read.value.clamped).toEqual([
      { field: "interval_seconds", requested: 0.2, used: 1, reason: "the minimum interval is 1 s" },
      { field: "timeout_seconds", requested: 900, used: 300, reason: "the operator's ceiling is 300 s" },
      { field: "max_attempts", requested: 100, used: 40, reason: "the operator's ceiling is 40 attempts" },
    ]);
  });

  test("refusals name what was wrong", () => {
    const error = (args: Record<string, unknown>) => {
      const read = parseVerifyRequest(args, settings);
      return read.ok ? "" : read.error;
    };
    expect(error({ expect_contains: "x" })).toContain("needs `tool`");
    expect(error({ tool: "t" })).toContain("needs a condition");
    expect(error({ tool: "t", expect_contains: "x", args_json: "{" })).toContain("did not parse");
    expect(error({ tool: "t", expect_contains: "x", args_json: "[1]" })).toContain("must be a JSON object");
    expect(error({ tool: "t", expect_contains: "x", timeout_seconds: -1 })).toContain(
      "timeout_seconds must be a positive number",
    );
    expect(error({ tool: "t", expect_jq: 3 })).toContain("expect_jq must be a string");
  });
});

describe("pollTarget", () => {
  test("an entry names a tool as the model sees it or as <server>_<tool>; the model may use either", () => {
    expect(pollTarget("kube__get_resource", settings, catalog)).toEqual({ ok: true, value: catalog[0] as PollTarget });
    expect(pollTarget("kube_get_resource", settings, catalog)).toEqual({ ok: true, value: catalog[0] as PollTarget });
    expect(pollTarget("kube__list_events", settings, catalog)).toEqual({ ok: true, value: catalog[1] as PollTarget });
  });

  test("outside poll_allow, mutating in the catalog, unknown, or wait_and_verify itself: refused, listing what may be polled", () => {
    const error = (name: string) => {
      const target = pollTarget(name, settings, catalog);
      return target.ok ? "" : target.error;
    };
    expect(error("kube__describe")).toBe(
      "wait_and_verify refuses kube__describe: it is not in tools.wait_and_verify.poll_allow. Pollable tools: kube__get_resource, kube__list_events, kube__delete_pod",
    );
    expect(error("kube__delete_pod")).toContain("the tool catalog marks it mutating");
    expect(error("read_file")).toContain("not in tools.wait_and_verify.poll_allow");
    expect(error("nope")).toContain('cannot poll "nope": no such tool');
    expect(error("wait_and_verify")).toContain("no such tool");
  });
});

describe("matching", () => {
  const request = (extra: Record<string, unknown>) => {
    const read = parseVerifyRequest({ tool: "t", ...extra }, settings);
    if (!read.ok) throw new Error(read.error);
    return read.value;
  };

  test("the text is the content string; the JSON is that text parsed, else structured content, else the output", () => {
    expect(pollSubject({ content: '{"a":1}', structured: { content: '{"a":1}' } })).toEqual({
      text: '{"a":1}',
      json: { a: 1 },
    });
    expect(pollSubject({ content: "phase: Running", structured: { phase: "Running" } })).toEqual({
      text: "phase: Running",
      json: { phase: "Running" },
    });
    expect(pollSubject({ content: "plain" })).toEqual({ text: "plain", json: { content: "plain" } });
    expect(pollSubject({ items: [1] })).toEqual({ text: '{"items":[1]}', json: { items: [1] } });
  });

  test("every given condition must hold", () => {
    const both = request({ expect_contains: "Running", expect_not_contains: "BackOff", expect_jq: ".x" });
    const subject = { text: "Running", json: {} };
    expect(conditionHolds(both, subject, () => true)).toBe(true);
    expect(conditionHolds(both, subject, () => false)).toBe(false);
    expect(conditionHolds(both, { text: "Running BackOff", json: {} }, () => true)).toBe(false);
    expect(conditionText(both)).toBe('expect_jq=.x AND expect_contains="Running" AND expect_not_contains="BackOff"');
  });

  test("last_result keeps 400 lines and 16 KiB, saying when it cut", () => {
    expect(lastResultText("short")).toBe("short");
    const lines = lastResultText(Array.from({ length: 500 }, (_, i) => `line ${i}`).join("\n"));
    expect(lines.split("\n")).toHaveLength(401);
    expect(lines).toEndWith("[... cut to 16384 bytes / 400 lines]");
    expect(lastResultText("x".repeat(20_000)).length).toBeLessThan(16_500);
  });
});

describe("plan-first", () => {
  const row = (name: string): CommittedRow =>
    ({
      seq: 1,
      event: { id: "e", ts: "t", invocationId: "i", author: "agent/plan", kind: "audit", name, metadata: {} },
    }) as unknown as CommittedRow;

  test("a plan-recorded row in the log keeps the gate open; a plan needs text", () => {
    expect(planRecordedIn([])).toBe(false);
    expect(planRecordedIn([row("plan-recorded")])).toBe(true);
    expect(planRecordedIn([row("plan-archived")])).toBe(false);
    expect(parsePlan({ plan: "  " })).toEqual({ ok: false, error: "record_plan needs `plan`: non-empty markdown" });
    expect(parsePlan({ plan: "steps" })).toEqual({ ok: true, value: "steps\n" });
    expect(parsePlan({ plan: "x".repeat(70_000) }).ok).toBe(false);
    expect(planFirstRefusal("kube__get")).toContain("plan first: kube__get was not run");
  });
});
