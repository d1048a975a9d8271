/**
 * `wait_and_verify`, pure (D467, D468): the tool's spec, its arguments read and clamped to the
 * operator's bounds (`tools.wait_and_verify.max_timeout_seconds`, `max_attempts`), which tools it
 * may poll (named in `poll_allow` and read-only in the catalog), what a poll's answer is matched
 * against, and the result's shape. The polling itself runs in src/runtime/wait-and-verify.ts; the
 * jq evaluator is handed in (src/tools/jq-condition.ts). No I/O.
 */
import type { ToolSpec } from "./model.ts";
import { type Result, err, ok } from "./result.ts";

export const WAIT_AND_VERIFY = "wait_and_verify";
/** Built-in ceilings (D467): 300 s and 40 attempts. */
export const DEFAULT_MAX_TIMEOUT_SECONDS = 300;
export const DEFAULT_MAX_ATTEMPTS = 40;
export const DEFAULT_INTERVAL_SECONDS = 5;
export const MIN_INTERVAL_SECONDS = 1;
export const DEFAULT_TIMEOUT_SECONDS = 60;
/** `last_result` is cut to this many bytes and lines. */
export const LAST_RESULT_MAX_BYTES = 16 * 1024;
export const LAST_RESULT_MAX_LINES = 400;

export interface WaitVerifySettings {
  /** Tools that may be polled, as configured (`<server>_<tool>` or the model's `<server>__<tool>`). */
  pollAllow: readonly string[];
  maxTimeoutSeconds: number;
  maxAttempts: number;
}

/** What the catalog says of a tool wait_and_verify is asked to poll. */
export interface PollTarget {
  /** The model-facing name (`<server>__<tool>` for an MCP tool). */
  name: string;
  server?: string;
  readOnly?: boolean;
}

export type Outcome = "verified" | "timeout" | "attempts_exhausted" | "canceled";

export interface Clamp {
  field: "interval_seconds" | "timeout_seconds" | "max_attempts";
  requested: number;
  used: number;
  reason: string;
}

export interface VerifyRequest {
  tool: string;
  args: Record<string, unknown>;
  expectJq?: string;
  expectContains?: string;
  expectNotContains?: string;
  intervalSeconds: number;
  timeoutSeconds: number;
  maxAttempts: number;
  clamped: Clamp[];
}

export interface Observation {
  attempt: number;
  at_seconds: number;
  matched: boolean;
  error?: string;
}

export function waitVerifySpec(settings: WaitVerifySettings): ToolSpec {
  return {
    name: WAIT_AND_VERIFY,
    description:
      "Poll one read-only cluster tool with the same arguments until a condition holds or the bounds run out, " +
      "and report whether it was verified with every observation. Give at least one of expect_jq (a jq " +
      "expression over the tool's JSON answer, true unless every output is false or null), expect_contains, " +
      "expect_not_contains (substrings of its text answer); several must all hold. " +
      `Pollable tools: ${settings.pollAllow.join(", ")}. Bounds: at most ${settings.maxTimeoutSeconds} s and ` +
      `${settings.maxAttempts} attempts (a larger request is clamped, and the result says so).`,
    inputSchema: {
      type: "object",
      properties: {
        tool: { type: "string", description: "the tool to poll, as named in your tool list" },
        args_json: { type: "string", description: "the polled tool's arguments, a JSON object (default {})" },
        expect_jq: { type: "string" },
        expect_contains: { type: "string" },
        expect_not_contains: { type: "string" },
        interval_seconds: {
          type: "number",
          description: `between attempts (default ${DEFAULT_INTERVAL_SECONDS}, at least 1)`,
        },
        timeout_seconds: { type: "number", description: `the whole wait (default ${DEFAULT_TIMEOUT_SECONDS})` },
        max_attempts: { type: "number", description: `attempts at most (default ${settings.maxAttempts})` },
      },
      required: ["tool"],
      additionalProperties: false,
    },
  };
}

const optionalText = (value: unknown, field: string): Result<string | undefined> =>
  value === undefined || typeof value === "string" ? ok(value) : err(`${field} must be a string`);

function number(value: unknown, field: string, fallback: number): Result<number> {
  if (value === undefined) return ok(fallback);
  return typeof value === "number" && Number.isFinite(value) && value > 0
    ? ok(value)
    : err(`${field} must be a positive number`);
}

function argsOf(value: unknown): Result<Record<string, unknown>> {
  if (value === undefined || value === "") return ok({});
  let parsed = value;
  if (typeof value === "string") {
    try {
      parsed = JSON.parse(value);
    } catch {
      return err("args_json must be a JSON object (it did not parse)");
    }
  }
  return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
    ? ok(parsed as Record<string, unknown>)
    : err("args_json must be a JSON object");
}

/** The arguments read; bounds over the operator's ceilings clamped and recorded (D467). */
export function parseVerifyRequest(args: Record<string, unknown>, settings: WaitVerifySettings): Result<VerifyRequest> {
  if (typeof args.tool !== "string" || args.tool.trim() === "") return err("wait_and_verify needs `tool`");
  const callArgs = argsOf(args.args_json);
  if (!callArgs.ok) return callArgs;
  const jq = optionalText(args.expect_jq, "expect_jq");
  if (!jq.ok) return jq;
  const contains = optionalText(args.expect_contains, "expect_contains");
  if (!contains.ok) return contains;
  const notContains = optionalText(args.expect_not_contains, "expect_not_contains");
  if (!notContains.ok) return notContains;
  if ([jq.value, contains.value, notContains.value].every((value) => value === undefined || value === ""))
    return err("wait_and_verify needs a condition: expect_jq, expect_contains or expect_not_contains");
  const interval = number(args.interval_seconds, "interval_seconds", DEFAULT_INTERVAL_SECONDS);
  if (!interval.ok) return interval;
  const defaultTimeout = Math.min(DEFAULT_TIMEOUT_SECONDS, settings.maxTimeoutSeconds);
  const timeout = number(args.timeout_seconds, "timeout_seconds", defaultTimeout);
  if (!timeout.ok) return timeout;
  const attempts = number(args.max_attempts, "max_attempts", settings.maxAttempts);
  if (!attempts.ok) return attempts;
  const clamped: Clamp[] = [];
  const clamp = (field: Clamp["field"], requested: number, used: number, reason: string) => {
    if (used !== requested) clamped.push({ field, requested, used, reason });
    return used;
  };
  const request: VerifyRequest = {
    tool: args.tool.trim(),
    args: callArgs.value,
    intervalSeconds: clamp(
      "interval_seconds",
      interval.value,
      Math.max(MIN_INTERVAL_SECONDS, interval.value),
      "the minimum interval is 1 s",
    ),
    timeoutSeconds: clamp(
      "timeout_seconds",
      timeout.value,
      Math.min(timeout.value, settings.maxTimeoutSeconds),
      `the operator's ceiling is ${settings.maxTimeoutSeconds} s`,
    ),
    maxAttempts: clamp(
      "max_attempts",
      attempts.value,
      Math.min(Math.floor(attempts.value), settings.maxAttempts),
      `the operator's ceiling is ${settings.maxAttempts} attempts`,
    ),
    clamped,
  };
  if (request.maxAttempts < 1) return err("max_attempts must be at least 1");
  if (jq.value) request.expectJq = jq.value;
  if (contains.value) request.expectContains = contains.value;
  if (notContains.value) request.expectNotContains = notContains.value;
  return ok(request);
}

/**
 * Whether `entry` of `poll_allow` names `target`: its model-facing name, or the recipe's one-underscore
 * spelling `<server>_<tool>` (D467).
 */
function allowed(entry: string, target: PollTarget): boolean {
  if (entry === target.name) return true;
  if (target.server === undefined) return false;
  const prefix = `${target.server}__`;
  return target.name.startsWith(prefix) && entry === `${target.server}_${target.name.slice(prefix.length)}`;
}

/** The tool a request names, if it may be polled; else why not (D467). */
export function pollTarget(
  requested: string,
  settings: WaitVerifySettings,
  catalog: readonly PollTarget[],
): Result<PollTarget> {
  const pollable = catalog.filter((tool) => settings.pollAllow.some((entry) => allowed(entry, tool)));
  const names = pollable.map((tool) => tool.name).join(", ") || "none";
  const target = catalog.find((tool) => tool.name === requested || allowed(requested, tool));
  if (target === undefined || target.name === WAIT_AND_VERIFY)
    return err(`wait_and_verify cannot poll ${JSON.stringify(requested)}: no such tool. Pollable tools: ${names}`);
  if (!pollable.includes(target))
    return err(
      `wait_and_verify refuses ${target.name}: it is not in tools.wait_and_verify.poll_allow. Pollable tools: ${names}`,
    );
  if (target.readOnly !== true)
    return err(
      `wait_and_verify refuses ${target.name}: the tool catalog marks it mutating (not read-only), and only read tools are polled`,
    );
  return ok(target);
}

/** The condition as the result names it: `expect_jq=... AND expect_contains="..."`. */
export function conditionText(request: VerifyRequest): string {
  const parts: string[] = [];
  if (request.expectJq !== undefined) parts.push(`expect_jq=${request.expectJq}`);
  if (request.expectContains !== undefined) parts.push(`expect_contains=${JSON.stringify(request.expectContains)}`);
  if (request.expectNotContains !== undefined)
    parts.push(`expect_not_contains=${JSON.stringify(request.expectNotContains)}`);
  return parts.join(" AND ");
}

/**
 * What a poll's output is matched against (D468): its text is the `content` string an MCP tool answers
 * (else the output as JSON); its JSON is that text parsed when it is JSON (a resource as the server
 * printed it), else the `structured` content when there is one, else the output itself.
 */
export function pollSubject(output: Record<string, unknown>): { text: string; json: unknown } {
  const text = typeof output.content === "string" ? output.content : JSON.stringify(output);
  if (typeof output.content === "string") {
    try {
      return { text, json: JSON.parse(output.content) };
    } catch {
      // not JSON: the structured content, or the output
    }
  }
  if (output.structured !== undefined && output.structured !== null) return { text, json: output.structured };
  return { text, json: output };
}

/** Whether the condition holds for one poll; `jq` evaluates expect_jq (it throws on an evaluation error). */
export function conditionHolds(
  request: VerifyRequest,
  subject: { text: string; json: unknown },
  jq: (json: unknown) => boolean,
): boolean {
  if (request.expectContains !== undefined && !subject.text.includes(request.expectContains)) return false;
  if (request.expectNotContains !== undefined && subject.text.includes(request.expectNotContains)) return false;
  return request.expectJq === undefined || jq(subject.json);
}

/** `last_result`: the last poll's text, cut to 16 KiB and 400 lines. */
export function lastResultText(text: string): string {
  let lines = text.split("\n");
  let cut = false;
  if (lines.length > LAST_RESULT_MAX_LINES) {
    lines = lines.slice(0, LAST_RESULT_MAX_LINES);
    cut = true;
  }
  let kept = lines.join("\n");
  const bytes = new TextEncoder().encode(kept);
  if (bytes.length > LAST_RESULT_MAX_BYTES) {
    kept = new TextDecoder().decode(bytes.subarray(0, LAST_RESULT_MAX_BYTES)).replace(/\uFFFD$/, "");
    cut = true;
  }
  return cut ? `${kept}\n[... cut to ${LAST_RESULT_MAX_BYTES} bytes / ${LAST_RESULT_MAX_LINES} lines]` : kept;
}
