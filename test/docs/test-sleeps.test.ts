/**
 * The suite waits on events, not on the clock (D349): every sleep or timer in test/ says what it
 * is in a comment on its line or on the comment lines directly above it, one of
 *   - "time under test": the duration is the behaviour checked (a TTL or timeout running out, a
 *     fake that takes that long on purpose, a window in which something must not happen);
 *   - "pacing": actions spaced on purpose;
 *   - "poll": the interval of a loop that re-checks a condition (prefer `waitFor` from
 *     test/support/daemon.ts);
 *   - "deadline": the bound on a wait for an event, reached only when the event never comes.
 * Anything else is a fixed sleep standing for an event: wait on the event instead. A zero-delay
 * yield (`Bun.sleep(0)`, `setTimeout(fn)`, `setTimeout(fn, 0)`) is a turn of the event loop, not
 * a wait on time, and needs no comment. docs/testing.md states the rule.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Glob } from "bun";

const REPO_ROOT = resolve(import.meta.dir, "..", "..");
const THIS_FILE = "test/docs/test-sleeps.test.ts";

/** The kinds a sleep's comment may name. */
const KINDS = /time under test|pacing|poll|deadline/i;
/** A sleep or a timer: `Bun.sleep(`, `Bun.sleepSync(`, `setTimeout(`, or a helper `sleep(`. */
const CALL = /(?<![\w$.])(Bun\.sleepSync|Bun\.sleep|setTimeout|sleep)\s*\(/g;

/** The source's text from `open` (an opening parenthesis) to its match, split at top-level commas. */
function callArguments(source: string, open: number): string[] {
  const args: string[] = [];
  let depth = 0;
  let start = open + 1;
  for (let i = open; i < source.length; i++) {
    const char = source[i];
    if (char === '"' || char === "'" || char === "`") {
      // Skip the literal (templates' `${}` parts included: good enough for a delay argument).
      for (i++; i < source.length && source[i] !== char; i++) if (source[i] === "\\") i++;
    } else if (char === "(" || char === "[" || char === "{") depth++;
    else if (char === ")" || char === "]" || char === "}") {
      depth--;
      if (depth === 0) {
        args.push(source.slice(start, i));
        return args.map((arg) => arg.trim()).filter((arg, index) => arg !== "" || index === 0);
      }
    } else if (char === "," && depth === 1) {
      args.push(source.slice(start, i));
      start = i + 1;
    }
  }
  return args;
}

/** True when the call's delay is zero or absent: a yield to the event loop, not a wait on time. */
function zeroDelay(name: string, args: string[]): boolean {
  const delay = name === "setTimeout" ? args[1] : args[0];
  return delay === undefined || delay === "" || delay === "0";
}

/** The comment text that may name the kind: the line's trailing comment and the comments above it. */
function commentsFor(lines: string[], index: number, column: number): string {
  const own = (lines[index] ?? "").slice(column).match(/\/\/.*$/)?.[0] ?? "";
  const above: string[] = [];
  for (let i = index - 1; i >= 0 && /^\s*(\/\/|\/\*|\*)/.test(lines[i] ?? ""); i--) above.push(lines[i] ?? "");
  return [own, ...above].join(" ");
}

/** The 1-based lines of `source` holding a sleep or timer whose comment names no kind. */
export function uncommentedSleeps(source: string): number[] {
  const lines = source.split("\n");
  const found: number[] = [];
  for (const match of source.matchAll(CALL)) {
    const at = match.index ?? 0;
    const lineStart = source.lastIndexOf("\n", at) + 1;
    const before = source.slice(lineStart, at);
    // Mentions in comments, and declarations of a helper, are not calls.
    if (/\/\/|^\s*\*/.test(before) || /\bfunction\s+$/.test(before)) continue;
    const name = match[1] ?? "";
    if (zeroDelay(name, callArguments(source, at + match[0].length - 1))) continue;
    const index = source.slice(0, at).split("\n").length - 1;
    if (!KINDS.test(commentsFor(lines, index, at - lineStart))) found.push(index + 1);
  }
  return found;
}

describe("the scanner", () => {
  test("a bare sleep or timer is found; one whose comment names its kind is not", () => {
    const source = [
      "await Bun.sleep(200);",
      "// Time under test: the token's one-second TTL runs out.",
      "await Bun.sleep(1200);",
      "await Bun.sleep(5); // pacing: turns run between injects",
      "setTimeout(() => controller.abort(), 100);",
      "const timer = setTimeout(() => reject(new Error('no answer')), 5000); // deadline",
      "while (!done()) await Bun.sleep(10); // poll",
      "await sleep(50);",
    ].join("\n");
    expect(uncommentedSleeps(source)).toEqual([1, 5, 8]);
  });

  test("the delay of a timer spanning lines is read past its callback; zero-delay yields need no comment", () => {
    const source = [
      "setTimeout(() => {",
      "  stream.write(frame(2));",
      "}, STREAM_MS);",
      "setTimeout(() => process.exit(0));",
      "await Bun.sleep(0);",
      "await new Promise((resolve) => setTimeout(resolve, 0));",
      "setTimeout(() => { stop(); },",
      "  0);",
    ].join("\n");
    expect(uncommentedSleeps(source)).toEqual([1]);
  });

  test("mentions in comments, code that only names a kind, and helper declarations", () => {
    const source = [
      "// no Bun.sleep(100) here",
      " * or setTimeout(fn, 5) in a doc comment",
      "function sleep(ms: number) {}",
      "const deadline = setTimeout(finish, 5000);",
    ].join("\n");
    expect(uncommentedSleeps(source)).toEqual([4]);
  });
});

test("every sleep and timer in test/ names its kind (time under test, pacing, poll, deadline)", () => {
  const offenders: string[] = [];
  for (const path of new Glob("test/**/*.{ts,tsx}").scanSync(REPO_ROOT)) {
    if (path === THIS_FILE) continue;
    for (const line of uncommentedSleeps(readFileSync(join(REPO_ROOT, path), "utf8")))
      offenders.push(`${path}:${line}`);
  }
  expect(offenders.sort()).toEqual([]);
});
