/**
 * The `agent` frame's event in the legacy PascalCase shape existing attach clients render (D8):
 * every key present, genai camelCase inside `Content`. Maps spar's event model; nothing else
 * produces this shape.
 */
import type { CommittedRow, SessionEvent, ToolResultEvent } from "../../core/events.ts";
import { assertNever } from "../../core/result.ts";
import { uncachedInputTokens } from "../../core/usage.ts";

type Part = Record<string, unknown>;

interface LegacyContent {
  parts: Part[];
  role: "user" | "model";
}

function content(event: SessionEvent): LegacyContent | null {
  switch (event.kind) {
    case "user-message":
      return { parts: [event.text === "" ? {} : { text: event.text }], role: "user" };
    case "model-response": {
      const parts: Part[] = event.text === "" ? [] : [{ text: event.text }];
      for (const call of event.toolCalls)
        parts.push({ functionCall: { id: call.callId, name: call.name, args: call.args } });
      return { parts, role: "model" };
    }
    case "tool-result":
      return {
        parts: [
          {
            functionResponse: {
              id: event.callId,
              name: event.name,
              response: { ...event.output, latency_ms: event.latencyMs, ...savingsOf(event) },
            },
          },
        ],
        role: "user",
      };
    case "audit":
      return null;
    default:
      return assertNever(event, "event kind");
  }
}

/**
 * `savings` of a result the model read as a digest (D353): the strategy as `path`, sizes before
 * and after, and an agentic summary's own call. A result passed through unchanged carries none.
 */
function savingsOf(event: ToolResultEvent): { savings?: Record<string, unknown> } {
  const digest = event.digest;
  if (digest === undefined || digest.method === "passthrough") return {};
  const savings: Record<string, unknown> = {
    path: digest.method,
    original_bytes: digest.rawBytes,
    digest_bytes: digest.digestBytes,
    original_tokens_est: digest.rawTokensEst,
    digest_tokens_est: digest.digestTokensEst,
  };
  if (digest.subagent) {
    savings.subagent_model = digest.subagent.model;
    savings.subagent_input_tokens = digest.subagent.usage.inputTokens;
    savings.subagent_output_tokens = digest.subagent.usage.outputTokens;
    savings.subagent_cost_usd = digest.subagent.cost.costUsd;
  }
  return { savings };
}

function usageMetadata(event: SessionEvent): Record<string, number> | null {
  if (event.kind !== "model-response") return null;
  const usage = event.usage;
  const metadata: Record<string, number> = {
    promptTokenCount: usage.inputTokens,
    candidatesTokenCount: usage.outputTokens,
    totalTokenCount: usage.totalTokens,
  };
  if (usage.cachedInputTokens > 0) metadata.cachedContentTokenCount = usage.cachedInputTokens;
  if (usage.cacheWriteInputTokens > 0) metadata.cacheWriteTokenCount = usage.cacheWriteInputTokens;
  if (usage.thoughtsTokens > 0) metadata.thoughtsTokenCount = usage.thoughtsTokens;
  if (usage.toolUseTokens > 0) metadata.toolUsePromptTokenCount = usage.toolUseTokens;
  if (uncachedInputTokens(usage) !== usage.inputTokens) metadata.uncachedPromptTokenCount = uncachedInputTokens(usage);
  return metadata;
}

function customMetadata(event: SessionEvent): Record<string, unknown> | null {
  switch (event.kind) {
    case "user-message":
      return event.promptIds.length > 0 ? { prompt_ids: event.promptIds } : null;
    case "model-response": {
      const metadata: Record<string, unknown> = { cost_usd: event.cost.costUsd };
      if (event.finishReason !== "stop") metadata.finish_reason = event.finishReason;
      return metadata;
    }
    case "tool-result":
      return event.isError ? { is_error: true } : null;
    case "audit":
      return { event: event.name, ...event.metadata };
    default:
      return assertNever(event, "event kind");
  }
}

export function legacyEvent(event: SessionEvent): Record<string, unknown> {
  return {
    Content: content(event),
    CitationMetadata: null,
    GroundingMetadata: null,
    UsageMetadata: usageMetadata(event),
    CustomMetadata: customMetadata(event),
    LogprobsResult: null,
    ModelVersion: "",
    Partial: false,
    TurnComplete: event.kind === "model-response" ? event.turnComplete : false,
    Interrupted: false,
    ErrorCode: "",
    ErrorMessage: "",
    FinishReason: "",
    AvgLogprobs: 0,
    ID: event.id,
    Timestamp: event.ts,
    InvocationID: event.invocationId,
    Branch: event.branch ?? "",
    Author: event.author,
    Actions: {
      StateDelta: {},
      ArtifactDelta: {},
      RequestedToolConfirmations: null,
      SkipSummarization: false,
      TransferToAgent: "",
      Escalate: false,
    },
    LongRunningToolIDs: null,
  };
}

/** `{"seq": N, "event": {...}}`: the data of an `agent` frame and of a subagent-events entry. */
export function legacyRow(row: CommittedRow): { seq: number; event: Record<string, unknown> } {
  return { seq: row.seq, event: legacyEvent(row.event) };
}
