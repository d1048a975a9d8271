/**
 * wait_and_verify's `expect_jq` (D468): a jq expression compiled once with @michaelhomer/jqjs (a
 * pure-JavaScript jq), true for an input when any output is neither false nor null. A program that
 * does not compile is an error before the first poll; one that fails on an input throws. It runs on
 * the daemon's main thread, so the parts of jq that can run without bound on a small input (loops
 * and generators, recursion, regular expressions, string repetition) are refused before compiling.
 */
import jq from "@michaelhomer/jqjs";
import { type Result, err, ok } from "../core/result.ts";

/** At most this many outputs are read per evaluation (a generator such as `range(1e9)` stops here). */
const MAX_OUTPUTS = 10_000;

/** Builtins whose cost is not bounded by the input's size: generators, loops, recursion, regular expressions. */
const UNBOUNDED =
  /(?<![.$\w])(def|range|repeat|while|until|recurse|recurse_down|combinations|test|match|capture|scan|splits|sub|gsub)\b/;

/** Why `program` is refused, or undefined (string literals are skipped: a word inside one is data). */
function unboundedPart(program: string): string | undefined {
  const code = program.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  const word = UNBOUNDED.exec(code)?.[1];
  if (word !== undefined) return `\`${word}\``;
  return code.includes("*") ? "`*` (it repeats strings)" : undefined;
}

export function compileJqCondition(program: string): Result<(input: unknown) => boolean> {
  const refused = unboundedPart(program);
  if (refused !== undefined)
    return err(
      `expect_jq may not use ${refused}: conditions are jq without loops, generators, recursion, regular expressions or *`,
    );
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
