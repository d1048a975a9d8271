/**
 * expect_jq (D468): the reference's convergence checks evaluate as jq does (true when any output is
 * neither false nor null); a program that does not compile is refused before any poll.
 */
import { expect, test } from "bun:test";
import { compileJqCondition } from "../../../src/tools/jq-condition.ts";

const holds = (program: string, input: unknown) => {
  const compiled = compileJqCondition(program);
  if (!compiled.ok) throw new Error(compiled.error);
  return compiled.value(input);
};

const pod = (phase: string, ready: boolean[]) => ({
  status: {
    phase,
    containerStatuses: ready.map((value) => ({ ready: value })),
    conditions: [{ type: "Ready", status: ready.every(Boolean) ? "True" : "False" }],
  },
});

test("the triage references' conditions", () => {
  const allReady = '.status.phase == "Running" and ([.status.containerStatuses[]?.ready] | all)';
  expect(holds(allReady, pod("Running", [true, true]))).toBe(true);
  expect(holds(allReady, pod("Running", [true, false]))).toBe(false);
  const readyCondition = '[.status.conditions[]? | select(.type == "Ready") | .status] | index("True") != null';
  expect(holds(readyCondition, pod("Running", [true]))).toBe(true);
  expect(holds(readyCondition, pod("Running", [false]))).toBe(false);
  expect(holds('.status.phase != "Pending"', pod("Pending", []))).toBe(false);
  expect(
    holds(".status.readyReplicas == .spec.replicas", { status: { readyReplicas: 3 }, spec: { replicas: 3 } }),
  ).toBe(true);
});

test("truthiness: any output neither false nor null; no output is false", () => {
  expect(holds(".a", { a: 0 })).toBe(true);
  expect(holds(".a", { a: null })).toBe(false);
  expect(holds(".a[]", { a: [false, null, "x"] })).toBe(true);
  expect(holds(".a[]", { a: [] })).toBe(false);
});

test("a program that does not compile is an error naming expect_jq", () => {
  const compiled = compileJqCondition(".status[");
  expect(compiled.ok).toBe(false);
  if (!compiled.ok) expect(compiled.error).toStartWith("expect_jq does not compile:");
});
