/**
 * Allow and deny patterns of the permission gate: parsing (untrusted input from config and
 * POST /perms/allow, /perms/deny) and matching against a tool call. Pure.
 *
 * Pattern syntax:
 *
 * - `tool`: every call of the tool named `tool` (exact, case-sensitive), `bash` included.
 * - `tool(glob)`: calls of `tool` whose key matches `glob`. The key is `command` for `bash`, `path`
 *   for a call with a string `path` argument (file tools), else the JSON of the arguments with
 *   object keys sorted. In the glob `*` matches any run of characters (none, `/` and newlines
 *   included) and `?` exactly one character; everything else is literal and there is no escape.
 *   The glob must match the whole key: `bash(git *)` matches `git push` but not `sudo git push`.
 *   Parentheses inside the glob must balance (`bash(echo (hi))` is fine, `bash(echo ))` is not).
 * - `*` alone: every call of every tool except `bash`; shell commands need a `bash` pattern.
 *
 * Surrounding whitespace is trimmed. Rejected: an empty entry, an empty tool name (`(ls)`), a tool
 * name holding whitespace or `*`, `?`, `(`, `)` (so `*(x)` is rejected: `*` stands alone), an empty
 * glob (`bash()`), unbalanced parentheses (`bash(ls`, `bash)`), text after the closing parenthesis
 * (`bash(ls)x`). A deny pattern wins over an allow pattern matching the same call.
 */
import type { ToolCall } from "./events.ts";
import { callKey } from "./permission-policy.ts";
import { type Result, err, ok } from "./result.ts";

export interface Pattern {
  /** The entry as given (trimmed); what GET /perms lists. */
  readonly source: string;
  /** The tool name, or `*` for every tool except `bash`. */
  readonly tool: string;
  /** The key glob of `tool(glob)`; absent for a bare tool name or `*`. */
  readonly glob?: string;
}

/** Parse a whole list; the first bad entry fails it, named in the error. */
export function parsePatterns(list: readonly string[]): Result<Pattern[], string> {
  const patterns: Pattern[] = [];
  for (const entry of list) {
    const parsed = parsePattern(entry);
    if (!parsed.ok) return parsed;
    patterns.push(parsed.value);
  }
  return ok(patterns);
}

export function parsePattern(entry: string): Result<Pattern, string> {
  const source = entry.trim();
  const bad = (why: string) => err(`invalid pattern ${JSON.stringify(entry)}: ${why}`);
  if (source === "") return bad("empty pattern");
  if (source === "*") return ok({ source, tool: "*" });
  const open = source.indexOf("(");
  const close = source.indexOf(")");
  if (close !== -1 && (open === -1 || close < open)) return bad("unbalanced parentheses");
  if (open === -1) {
    const nameProblem = toolNameProblem(source);
    return nameProblem === undefined ? ok({ source, tool: source }) : bad(nameProblem);
  }
  const tool = source.slice(0, open);
  const nameProblem = toolNameProblem(tool);
  if (nameProblem !== undefined) return bad(nameProblem);
  const end = closingIndex(source, open);
  if (end === undefined) return bad("unbalanced parentheses");
  if (end !== source.length - 1) return bad("text after the closing parenthesis");
  const glob = source.slice(open + 1, end);
  if (glob === "") return bad("empty argument glob: write the bare tool name to match every call");
  return ok({ source, tool, glob });
}

/** Index of the `)` closing the `(` at `open`, or undefined when it never closes. */
function closingIndex(text: string, open: number): number | undefined {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === "(") depth++;
    else if (text[i] === ")" && --depth === 0) return i;
  }
  return undefined;
}

function toolNameProblem(tool: string): string | undefined {
  if (tool === "") return "empty tool name";
  if (tool.includes("*")) return "`*` stands alone and takes no glob; name the tool";
  if (/[\s?()]/u.test(tool)) return "a tool name may not contain whitespace, `?` or parentheses";
  return undefined;
}

/** Whether one pattern matches a call; pass `key` when it is already known. */
export function matchesPattern(
  pattern: Pattern,
  call: Pick<ToolCall, "name" | "args">,
  key: string = callKey(call),
): boolean {
  if (pattern.tool === "*") return call.name !== "bash";
  if (pattern.tool !== call.name) return false;
  return pattern.glob === undefined || globMatches(pattern.glob, key);
}

/** The first pattern in the list matching the call, if any. */
export function firstMatch(
  patterns: readonly Pattern[],
  call: Pick<ToolCall, "name" | "args">,
  key: string = callKey(call),
): Pattern | undefined {
  return patterns.find((pattern) => matchesPattern(pattern, call, key));
}

/**
 * Whole-string glob match: `*` any run of characters, `?` one character (a code point). Iterative
 * with backtracking to the last `*` only, so time is at most glob length x text length whatever
 * the operator wrote (a regex of many `.*` could backtrack exponentially on a long key).
 */
export function globMatches(glob: string, text: string): boolean {
  const pattern = Array.from(glob);
  const chars = Array.from(text);
  let p = 0;
  let t = 0;
  let star = -1;
  let resumeAt = 0;
  while (t < chars.length) {
    const want = pattern[p];
    if (want === "?" || (want !== undefined && want !== "*" && want === chars[t])) {
      p++;
      t++;
    } else if (want === "*") {
      star = p++;
      resumeAt = t;
    } else if (star !== -1) {
      p = star + 1;
      t = ++resumeAt;
    } else {
      return false;
    }
  }
  while (pattern[p] === "*") p++;
  return p === pattern.length;
}
