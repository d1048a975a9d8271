import { expect, test } from "bun:test";
import { LoopDetector, callFingerprint, watchdogFeedbackBlock } from "../../../src/core/watchdog.ts";

const call = (name: string, args: Record<string, unknown> = {}) => ({ name, args });

test("fingerprints ignore argument key order", () => {
  expect(callFingerprint(call("read_file", { path: "a", limit: 2 }))).toBe(
    callFingerprint(call("read_file", { limit: 2, path: "a" })),
  );
  expect(callFingerprint(call("read_file", { path: "a" }))).not.toBe(callFingerprint(call("read_file", { path: "b" })));
});

test("the same call repeated: a warning at 3, critical at 5, each raised once", () => {
  const detector = new LoopDetector();
  const signals = Array.from({ length: 7 }, () => detector.observe(call("bash", { cmd: "ls" })));
  expect(signals.map((signal) => signal?.severity ?? null)).toEqual([
    null,
    null,
    "warning",
    null,
    "critical",
    null,
    null,
  ]);
  expect(signals[4]?.detector).toBe("repeated-tool-call");
  expect(signals[4]?.message).toContain("5 times");
});

test("a different call re-arms the repeat detector", () => {
  const detector = new LoopDetector();
  for (let i = 0; i < 3; i++) detector.observe(call("bash", { cmd: "ls" }));
  detector.observe(call("bash", { cmd: "pwd" }));
  const again = [1, 2, 3].map(() => detector.observe(call("bash", { cmd: "ls" })));
  expect(again.map((signal) => signal?.severity ?? null)).toEqual([null, null, "warning"]);
});

test("same tool with different arguments is not a repeat", () => {
  const detector = new LoopDetector();
  const signals = Array.from({ length: 8 }, (_, i) => detector.observe(call("read_file", { path: `f${i}` })));
  expect(signals.every((signal) => signal === undefined)).toBe(true);
});

test("an A-B cycle: warning after 3 repetitions, critical after 4", () => {
  const detector = new LoopDetector();
  const signals = [];
  for (let i = 0; i < 5; i++) {
    signals.push(detector.observe(call("read_file", { path: "x" })));
    signals.push(detector.observe(call("write_file", { path: "x" })));
  }
  const raised = signals
    .map((signal, index) => (signal ? `${index}:${signal.severity}:${signal.detector}` : null))
    .filter(Boolean);
  expect(raised).toEqual(["5:warning:alternating-tool-cycle", "7:critical:alternating-tool-cycle"]);
});

test("an A-B-C cycle is detected; a broken cycle is not", () => {
  const detector = new LoopDetector();
  const seen = [];
  for (let i = 0; i < 4; i++) for (const name of ["a", "b", "c"]) seen.push(detector.observe(call(name)));
  expect(seen.filter(Boolean).map((signal) => signal?.severity)).toEqual(["warning", "critical"]);
  const other = new LoopDetector();
  const names = ["a", "b", "a", "c", "a", "b", "a", "c"];
  expect(names.map((name) => other.observe(call(name))).filter(Boolean)).toEqual([]);
});

test("the feedback block names each signal", () => {
  const block = watchdogFeedbackBlock([
    {
      detector: "repeated-tool-call",
      severity: "warning",
      message: "the agent issued the same bash call 3 times in a row",
    },
  ]);
  expect(block.startsWith("[watchdog]\n")).toBe(true);
  expect(block).toContain("- warning: the agent issued the same bash call 3 times in a row");
});
