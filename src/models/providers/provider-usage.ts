/**
 * One model call's usage, from the AI SDK's normalized counts (plus the provider's raw usage
 * where the SDK drops something) into spar's TokenUsage: cached, cache-write and uncached input
 * disjoint and summing to input; output without thoughts; thoughts apart (billed as output);
 * tool-use prompt tokens apart and unpriced; the provider's own total. Pure.
 *
 * Per provider:
 * - openai: `cached_tokens` and `cache_write_tokens` are parts of `input_tokens`.
 * - anthropic: input is `input_tokens` + `cache_read_input_tokens` + `cache_creation_input_tokens`.
 * - google: input is `promptTokenCount` (it includes `cachedContentTokenCount`; cache writes are
 *   billed as storage, never per token, so 0); `toolUsePromptTokenCount` is tool-use tokens, not
 *   input; output is `candidatesTokenCount`, thoughts `thoughtsTokenCount`; total `totalTokenCount`.
 * - openai-compatible: as openai chat, plus `prompt_tokens_details.cache_write_tokens` and
 *   DeepSeek's `prompt_cache_hit_tokens` when the server sends them (the SDK ignores both).
 */
import type { LanguageModelUsage } from "ai";
import type { RemoteProvider } from "../../core/model.ts";
import type { TokenUsage } from "../../core/usage.ts";

type Raw = Record<string, unknown> | undefined;

const count = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isFinite(value) && value >= 0 ? Math.floor(value) : undefined;

const record = (value: unknown): Raw =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;

export function tokenUsageOf(provider: RemoteProvider, usage: LanguageModelUsage): TokenUsage {
  const raw = record(usage.raw);
  if (provider === "google" && raw) return googleUsage(raw);
  let cached = usage.inputTokenDetails.cacheReadTokens ?? 0;
  let cacheWrite = usage.inputTokenDetails.cacheWriteTokens ?? 0;
  if (provider === "openai-compatible" && raw) {
    const details = record(raw.prompt_tokens_details);
    cacheWrite = usage.inputTokenDetails.cacheWriteTokens ?? count(details?.cache_write_tokens) ?? 0;
    if (cached === 0) cached = count(raw.prompt_cache_hit_tokens) ?? 0;
  }
  const noCache = usage.inputTokenDetails.noCacheTokens ?? 0;
  const input = Math.max(usage.inputTokens ?? noCache + cached + cacheWrite, cached + cacheWrite);
  const thoughts = usage.outputTokenDetails.reasoningTokens ?? 0;
  const outputTotal = usage.outputTokens ?? (usage.outputTokenDetails.textTokens ?? 0) + thoughts;
  const output = Math.max(0, outputTotal - thoughts);
  const providerTotal = count(raw?.total_tokens) ?? usage.totalTokens;
  return {
    inputTokens: input,
    cachedInputTokens: cached,
    cacheWriteInputTokens: cacheWrite,
    outputTokens: output,
    thoughtsTokens: thoughts,
    toolUseTokens: 0,
    totalTokens: providerTotal ?? input + outputTotal,
  };
}

function googleUsage(raw: Record<string, unknown>): TokenUsage {
  const input = count(raw.promptTokenCount) ?? 0;
  const cached = Math.min(count(raw.cachedContentTokenCount) ?? 0, input);
  const output = count(raw.candidatesTokenCount) ?? 0;
  const thoughts = count(raw.thoughtsTokenCount) ?? 0;
  const toolUse = count(raw.toolUsePromptTokenCount) ?? 0;
  return {
    inputTokens: input,
    cachedInputTokens: cached,
    cacheWriteInputTokens: 0,
    outputTokens: output,
    thoughtsTokens: thoughts,
    toolUseTokens: toolUse,
    totalTokens: count(raw.totalTokenCount) ?? input + toolUse + output + thoughts,
  };
}
