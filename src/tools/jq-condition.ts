/**
 * wait_and_verify's `expect_jq` (D468): a jq expression compiled once with @michaelhomer/jqjs (a
 * pure-JavaScript jq), true for an input when any output is neither false nor null. A program that
 * does not compile is an error before the first poll; one that fails on an input throws.
 */
import jq from "@michaelhomer/jqjs";
import { type Result, err, ok } from "../core/result.ts";

/** At most this many outputs are read per evaluation (a generator such as `range(1e9)` stops here). */
const MAX_OUTPUTS = 10_000;

export function compileJqCondition(program: string): Result<(input: unknown) => boolean> {
  let compiled: (input: unknown) => Iterable<unknown>;
  try {
    compiled = jq.compile(program);
  } catch (error) {
    return err(`expect_jq does not compile: ${error instanceof Error ? error.message : String(error)}`);
  }
  return ok((input) => {
    let seen = 0;
    for (const output of compiled(input)) {
      if (output !== false && output !== null && output !== undefined) return true;
      if (++seen >= MAX_OUTPUTS) break;
    }
    return false;
  });
}
