import { expect, test } from "bun:test";
import { formatDuration, parseDuration } from "../../../src/core/duration.ts";
import { normalizeIdentities } from "../../../src/core/identities.ts";
import { bundleInbox, titleFromPrompt } from "../../../src/core/inbox-bundle.ts";
import { classifyTurnFailure, shortenMessage } from "../../../src/core/turn-errors.ts";

test("identities are trimmed, emptied entries dropped, duplicates removed, order kept", () => {
  expect(normalizeIdentities([" b ", "a", "", "  ", "b", "c", "a"])).toEqual(["b", "a", "c"]);
});

test("one inbox message is the prompt verbatim; several become one numbered bundle", () => {
  expect(bundleInbox(["hello"])).toBe("hello");
  const bundle = bundleInbox(["one", "two"]);
  expect(bundle).toContain("1. one\n2. two");
  expect(bundle.split("\n")[0]).toContain("2 messages");
});

test("titles collapse whitespace and stop at 60 runes", () => {
  expect(titleFromPrompt("  fix\n the   build ")).toBe("fix the build");
  const long = titleFromPrompt("é".repeat(80)) ?? "";
  expect(Array.from(long).length).toBe(60);
  expect(titleFromPrompt("   ")).toBeUndefined();
});

test("durations in Go notation", () => {
  expect(parseDuration("1h30m0s")).toEqual({ ok: true, value: 5_400_000 });
  expect(parseDuration("250ms")).toEqual({ ok: true, value: 250 });
  expect(parseDuration("0")).toEqual({ ok: true, value: 0 });
  expect(parseDuration("5 minutes").ok).toBe(false);
  expect(parseDuration("").ok).toBe(false);
  expect(formatDuration(5_400_000)).toBe("1h30m0s");
});

test("turn failures map to the spec's kinds with retryable, code and hint", () => {
  expect(classifyTurnFailure("slow down", "429")).toMatchObject({ kind: "rate_limited", retryable: true, code: "429" });
  expect(classifyTurnFailure("bad key", "401")).toMatchObject({ kind: "auth_error", retryable: false });
  expect(classifyTurnFailure("no such model", "NOT_FOUND")).toMatchObject({
    kind: "model_not_found",
    retryable: false,
  });
  expect(classifyTurnFailure("upstream", "503")).toMatchObject({ kind: "transient_network", retryable: true });
  expect(classifyTurnFailure("deadline", "DEADLINE_EXCEEDED")).toMatchObject({
    kind: "transient_network",
    retryable: true,
  });
  const bare400 = classifyTurnFailure("invalid", "INVALID_ARGUMENT");
  expect(bare400).toMatchObject({ kind: "config_error", retryable: false });
  expect(bare400.hint).toContain("transient");
  expect(bare400.hint).toContain("reproduces");
  expect(classifyTurnFailure("weird")).toEqual({ kind: "unknown", message: "weird", retryable: false });
  expect(shortenMessage(`${"x".repeat(300)}\nsecond line`)).toBe(`${"x".repeat(240)}...`);
});
