/**
 * A model's expect_jq runs on the daemon's main thread (D468): the parts of jq that can run without
 * bound on a small input (a generator to 1e12, an endless loop, recursion, a catastrophic regular
 * expression, a gigabyte string) are refused before compiling, so a wait_and_verify call cannot
 * stall every session of the daemon.
 */
import { expect, test } from "bun:test";
import { compileJqCondition } from "../../src/tools/jq-condition.ts";

const holds = (program: string, input: unknown) => {
  const compiled = compileJqCondition(program);
  if (!compiled.ok) throw new Error(compiled.error);
  return compiled.value(input);
};

test("the unbounded parts of jq are refused before compiling; a word in a string or a field name is data", () => {
  for (const program of [
    "last(range(1e12))",
    "def f: f; f",
    "until(false; .)",
    "[repeat(1)]",
    "recurse(.a)",
    '.name | test("(a+)+$")',
    '"x" * 1000000000',
  ]) {
    const compiled = compileJqCondition(program);
    expect(compiled.ok).toBe(false);
    if (!compiled.ok) expect(compiled.error).toStartWith("expect_jq may not use");
  }
  expect(holds('.status.test == "range(1)"', { status: { test: "range(1)" } })).toBe(true);
  expect(holds("[limit(1; .items[])] | first | .ready", { items: [{ ready: true }, { ready: false }] })).toBe(true);
});
