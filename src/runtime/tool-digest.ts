/**
 * A tool result on its way to the model (D352, D353): under the threshold, or with the
 * passthrough strategy, it goes unchanged; over it, the structural strategy reduces it by its
 * shape (src/core/digest.ts) and the agentic strategy has the model summarize it in one tool-less
 * call on a turn worker (the way the compactor makes its summary call), falling back to the
 * structural digest when that call fails. Every result that ran gets a digest record for its row:
 * the strategy, the sizes and, when the model reads a digest, the raw result (D354).
 */
import {
  type DigestRecord,
  type DigestSettings,
  measure,
  reduceText,
  structuralDigest,
  wrapDigest,
} from "../core/digest.ts";
import { digestJson } from "../core/digest-json.ts";
import type { DigestMethod } from "../core/digest-tally.ts";
import type { ToolCall } from "../core/events.ts";
import type { ToolRunResult } from "../core/tool-catalog.ts";
import { type TokenUsage, priceUsage } from "../core/usage.ts";
import type { ActorContext } from "./actor-types.ts";
import { bareCall } from "./bare-call.ts";

/** The longest result text the agentic summary reads whole; a longer one is digested structurally first. */
export const AGENTIC_INPUT_CHARS = 200_000;

const SUMMARY_INSTRUCTION =
  "Summarize this tool result for an agent that asked for it. Keep every identifier, number, path, error and warning it may need; say what kinds of entries it holds and how many; no preamble.";

export interface DigestedResult {
  /** What the model reads. */
  output: Record<string, unknown>;
  record: DigestRecord;
}

type DigestContext = Pick<ActorContext, "pool" | "model" | "pricing" | "nextScriptIndex">;

function passthrough(result: ToolRunResult, size: { bytes: number; tokens: number }): DigestedResult {
  return {
    output: result.output,
    record: {
      method: "passthrough",
      rawBytes: size.bytes,
      digestBytes: size.bytes,
      rawTokensEst: size.tokens,
      digestTokensEst: size.tokens,
    },
  };
}

function digested(
  method: DigestMethod,
  result: ToolRunResult,
  size: { bytes: number; tokens: number },
  output: Record<string, unknown>,
  subagent?: DigestRecord["subagent"],
): DigestedResult | undefined {
  const after = measure(output);
  // A digest no smaller than the result is no digest.
  if (after.bytes >= size.bytes) return undefined;
  const record: DigestRecord = {
    method,
    raw: result.output,
    rawBytes: size.bytes,
    digestBytes: after.bytes,
    rawTokensEst: size.tokens,
    digestTokensEst: after.tokens,
  };
  if (subagent) record.subagent = subagent;
  return { output, record };
}

/** The structural digest of a result; one with no single large field is digested as one JSON value. */
function structural(call: ToolCall, result: ToolRunResult, bytes: number): Record<string, unknown> {
  const wrapped = structuralDigest(result.output, call.callId, bytes);
  if (wrapped !== undefined) return wrapped;
  const text = JSON.stringify(result.output);
  const digest = digestJson(result.output, Math.max(2048, Math.floor(text.length / 4)));
  return wrapDigest({}, digest.text, "structural", bytes, call.callId, { kind: "json", ...digest.elisions });
}

/**
 * What the model reads of a result that ran, and its row's digest record. `endsTurn` results
 * (a parked call's stand-in) are not results: they get no record.
 */
export async function digestToolResult(
  settings: DigestSettings,
  context: DigestContext,
  call: ToolCall,
  result: ToolRunResult,
): Promise<DigestedResult | undefined> {
  if (result.endsTurn) return undefined;
  const size = measure(result.output);
  if (settings.strategy === "passthrough" || size.bytes <= settings.thresholdBytes || settings.exempt?.(call.name))
    return passthrough(result, size);
  if (settings.strategy === "agentic") {
    const summary = await summarize(context, call, result.output);
    if (summary.ok) {
      const model = context.model.name;
      const subagent = { model, usage: summary.usage, cost: priceUsage(summary.usage, context.pricing.rates(model)) };
      const output = wrapDigest({}, summary.text, "agentic", size.bytes, call.callId, { kind: "summary", model });
      const done = digested("agentic", result, size, output, subagent);
      if (done) return done;
    }
    // The summary failed (or saved nothing): the structural digest stands in, the reason noted.
    const output = structural(call, result, size.bytes);
    const meta = output.digest_meta as Record<string, unknown>;
    meta.agentic_failed = summary.ok ? "the summary was no smaller than the result" : summary.reason;
    return digested("structural", result, size, output) ?? passthrough(result, size);
  }
  return digested("structural", result, size, structural(call, result, size.bytes)) ?? passthrough(result, size);
}

type Summary = { ok: true; text: string; usage: TokenUsage } | { ok: false; reason: string };

/** One tool-less model call on a turn worker summarizing the result (D353). */
async function summarize(context: DigestContext, call: ToolCall, output: Record<string, unknown>): Promise<Summary> {
  const raw = JSON.stringify(output);
  const input = raw.length <= AGENTIC_INPUT_CHARS ? raw : reduceText(raw, AGENTIC_INPUT_CHARS).text;
  const prompt = `${SUMMARY_INSTRUCTION}\n\nTool: ${call.name}\nResult:\n${input}`;
  const ended = await bareCall(context, [{ role: "user", text: prompt }], "digest").outcome;
  switch (ended.status) {
    case "answered":
      return ended.text === ""
        ? { ok: false, reason: "the model returned an empty summary" }
        : { ok: true, text: ended.text, usage: ended.usage };
    case "empty":
      return { ok: false, reason: "the model returned an empty summary" };
    case "failed":
      return { ok: false, reason: ended.message };
    case "canceled":
      return { ok: false, reason: "the summary call was canceled" };
  }
}
