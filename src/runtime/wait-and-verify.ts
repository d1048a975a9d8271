/**
 * `wait_and_verify`'s polling (D467, D468): checks the request (a pollable read tool, a condition
 * that compiles, bounds clamped), then calls the tool through the session's own tool path (D469:
 * the plan gate and the permission gate apply to every attempt, as to the model's calls) until the
 * condition holds, the attempts or the time run out, or the turn ends. Each attempt is an
 * observation in the result; the attempts leave no rows of their own and are not shown to the
 * watchdog (the one wait_and_verify call and its result row stand for them).
 */
import type { ToolCall } from "../core/events.ts";
import type { ToolRunResult } from "../core/tool-catalog.ts";
import {
  type Observation,
  type Outcome,
  type PollTarget,
  type VerifyRequest,
  type WaitVerifySettings,
  conditionHolds,
  conditionText,
  lastResultText,
  parseVerifyRequest,
  pollSubject,
  pollTarget,
} from "../core/wait-verify.ts";
import { compileJqCondition } from "../tools/jq-condition.ts";
import type { TurnTools } from "./gated-tools.ts";

export interface WaitDeps {
  settings: WaitVerifySettings;
  /** The tools the session has now, as the catalog lists them. */
  catalog(): readonly PollTarget[];
  /** The session's tool path below wait_and_verify: each attempt is run as a model's call would be. */
  inner: TurnTools;
  /** Aborted when the turn ends (cancel, interrupt, shutdown). */
  signal: AbortSignal;
}

const failure = (error: string, extra: Record<string, unknown> = {}): ToolRunResult => ({
  output: { error, ...extra },
  isError: true,
});

/** Resolves after `ms`, or early (false) when the signal aborts. */
function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

export async function waitAndVerify(call: ToolCall, turnId: string, deps: WaitDeps): Promise<ToolRunResult> {
  const request = parseVerifyRequest(call.args, deps.settings);
  if (!request.ok) return failure(request.error);
  const target = pollTarget(request.value.tool, deps.settings, deps.catalog());
  if (!target.ok) return failure(target.error, { refused: true });
  const jq = request.value.expectJq === undefined ? NO_JQ : compileJqCondition(request.value.expectJq);
  if (!jq.ok) return failure(jq.error);
  return await poll(call, turnId, { ...request.value, tool: target.value.name }, jq.value, deps);
}

/** Without expect_jq the jq part of the condition always holds. */
const NO_JQ = { ok: true as const, value: (_: unknown) => true };

/** One attempt: its observation and text, or the failure that stops the wait (a refusal, a jq error). */
async function attemptOnce(
  call: ToolCall,
  turnId: string,
  request: VerifyRequest,
  jq: (json: unknown) => boolean,
  deps: WaitDeps,
  observation: Observation,
): Promise<{ text: string; stop?: string; refused?: true }> {
  const verdict = await deps.inner.run(
    { callId: `${call.callId}.${observation.attempt}`, name: request.tool, args: request.args },
    turnId,
  );
  const output = verdict.result.output;
  // The gate refused the poll (plan first, a deny pattern, an operator): no wait can change that.
  if (output.refused === true) {
    observation.error = String(output.error);
    return { text: "", stop: `the poll of ${request.tool} was refused: ${observation.error}`, refused: true };
  }
  const subject = pollSubject(output);
  if (verdict.result.isError) {
    observation.error = typeof output.error === "string" ? output.error : subject.text;
    return { text: subject.text };
  }
  try {
    observation.matched = conditionHolds(request, subject, jq);
    return { text: subject.text };
  } catch (error) {
    observation.error = `expect_jq could not be evaluated: ${error instanceof Error ? error.message : String(error)}`;
    return { text: subject.text, stop: observation.error };
  }
}

async function poll(
  call: ToolCall,
  turnId: string,
  request: VerifyRequest,
  jq: (json: unknown) => boolean,
  deps: WaitDeps,
): Promise<ToolRunResult> {
  const started = performance.now();
  const seconds = () => Math.round((performance.now() - started) / 100) / 10;
  const observations: Observation[] = [];
  let lastResult = "";
  let lastError: string | undefined;
  let outcome: Outcome = deps.signal.aborted ? "canceled" : "attempts_exhausted";
  for (let attempt = 1; outcome === "attempts_exhausted" && attempt <= request.maxAttempts; attempt++) {
    const observation: Observation = { attempt, at_seconds: seconds(), matched: false };
    const { text, stop, refused } = await attemptOnce(call, turnId, request, jq, deps, observation);
    observations.push(observation);
    lastResult = text;
    if (stop !== undefined)
      return failure(`wait_and_verify stopped: ${stop}`, {
        ...(refused ? { refused } : {}),
        observations,
        last_result: lastResultText(lastResult),
      });
    if (observation.error !== undefined) lastError = observation.error;
    if (observation.matched) outcome = "verified";
    else if (attempt === request.maxAttempts) break;
    else if (seconds() + request.intervalSeconds > request.timeoutSeconds) outcome = "timeout";
    else if (!(await pause(request.intervalSeconds * 1000, deps.signal))) outcome = "canceled";
  }
  const output: Record<string, unknown> = {
    verified: outcome === "verified",
    outcome,
    tool: request.tool,
    condition: conditionText(request),
    attempts: observations.length,
    interval_seconds: request.intervalSeconds,
    timeout_seconds: request.timeoutSeconds,
    max_attempts: request.maxAttempts,
    elapsed_seconds: seconds(),
    last_result: lastResultText(lastResult),
    observations,
  };
  if (lastError !== undefined) output.last_error = lastError;
  if (request.clamped.length > 0) output.clamped = request.clamped;
  return { output, isError: false };
}
