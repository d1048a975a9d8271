/**
 * The pure per-provider mappings: usage (raw fields the SDK drops or files elsewhere), finish
 * reasons (`length` only for the output cap) and errors (stream codes, retries, bodies).
 */
import { describe, expect, test } from "bun:test";
import { APICallError, type LanguageModelUsage, RetryError, StreamProviderError } from "ai";
import type { TurnErrorKind } from "../../../src/core/events.ts";
import { ModelCallError } from "../../../src/core/model.ts";
import { classifyTurnFailure } from "../../../src/core/turn-errors.ts";
import { normalizeFinishReason } from "../../../src/models/providers/finish-reason.ts";
import { toModelCallError } from "../../../src/models/providers/provider-errors.ts";
import { tokenUsageOf } from "../../../src/models/providers/provider-usage.ts";

const sdkUsage = (over: Partial<LanguageModelUsage> & { raw?: Record<string, unknown> }): LanguageModelUsage => ({
  inputTokens: undefined,
  inputTokenDetails: { noCacheTokens: undefined, cacheReadTokens: undefined, cacheWriteTokens: undefined },
  outputTokens: undefined,
  outputTokenDetails: { textTokens: undefined, reasoningTokens: undefined },
  totalTokens: undefined,
  ...over,
});

describe("usage", () => {
  test("google: tool-use prompt tokens are kept apart from input and not priced", () => {
    // The SDK folds toolUsePromptTokenCount into inputTokens; the spec keeps it as tool_use_tokens.
    const usage = sdkUsage({
      inputTokens: 1300,
      inputTokenDetails: { noCacheTokens: 800, cacheReadTokens: 500, cacheWriteTokens: undefined },
      outputTokens: 90,
      raw: {
        promptTokenCount: 1000,
        toolUsePromptTokenCount: 300,
        cachedContentTokenCount: 500,
        candidatesTokenCount: 40,
        thoughtsTokenCount: 50,
        totalTokenCount: 1390,
      },
    });
    expect(tokenUsageOf("google", usage)).toEqual({
      inputTokens: 1000,
      cachedInputTokens: 500,
      cacheWriteInputTokens: 0,
      outputTokens: 40,
      thoughtsTokens: 50,
      toolUseTokens: 300,
      totalTokens: 1390,
    });
  });

  test("openai-compatible: DeepSeek's prompt_cache_hit_tokens count as cached input", () => {
    const usage = sdkUsage({
      inputTokens: 900,
      inputTokenDetails: { noCacheTokens: 900, cacheReadTokens: 0, cacheWriteTokens: undefined },
      outputTokens: 10,
      outputTokenDetails: { textTokens: 10, reasoningTokens: 0 },
      totalTokens: 910,
      raw: {
        prompt_tokens: 900,
        completion_tokens: 10,
        total_tokens: 910,
        prompt_cache_hit_tokens: 640,
        prompt_cache_miss_tokens: 260,
      },
    });
    expect(tokenUsageOf("openai-compatible", usage)).toMatchObject({
      inputTokens: 900,
      cachedInputTokens: 640,
      cacheWriteInputTokens: 0,
      totalTokens: 910,
    });
  });

  test("missing totals are rebuilt from the parts; input never falls below cached + cache write", () => {
    const usage = sdkUsage({
      inputTokenDetails: { noCacheTokens: 10, cacheReadTokens: 100, cacheWriteTokens: 50 },
      outputTokenDetails: { textTokens: 7, reasoningTokens: 3 },
    });
    expect(tokenUsageOf("anthropic", usage)).toEqual({
      inputTokens: 160,
      cachedInputTokens: 100,
      cacheWriteInputTokens: 50,
      outputTokens: 7,
      thoughtsTokens: 3,
      toolUseTokens: 0,
      totalTokens: 170,
    });
    const inconsistent = sdkUsage({
      inputTokens: 20,
      inputTokenDetails: { noCacheTokens: 0, cacheReadTokens: 30, cacheWriteTokens: 5 },
    });
    expect(tokenUsageOf("openai", inconsistent).inputTokens).toBe(35);
  });

  test("a provider that reports nothing maps to zeros", () => {
    expect(tokenUsageOf("openai", sdkUsage({}))).toEqual({
      inputTokens: 0,
      cachedInputTokens: 0,
      cacheWriteInputTokens: 0,
      outputTokens: 0,
      thoughtsTokens: 0,
      toolUseTokens: 0,
      totalTokens: 0,
    });
  });
});

describe("finish reasons", () => {
  test("length stays length for the output cap and becomes other for a full context window", () => {
    expect(normalizeFinishReason("anthropic", "length", "max_tokens")).toBe("length");
    expect(normalizeFinishReason("anthropic", "length", "model_context_window_exceeded")).toBe("other");
    expect(normalizeFinishReason("google", "length", "MAX_TOKENS")).toBe("length");
    expect(normalizeFinishReason("openai", "tool-calls", undefined)).toBe("tool-calls");
  });
});

describe("errors", () => {
  const apiError = (statusCode: number | undefined, responseBody?: string) =>
    new APICallError({
      message: "Bad Gateway",
      url: "http://127.0.0.1:9/v1/responses",
      requestBodyValues: {},
      ...(statusCode === undefined ? {} : { statusCode }),
      ...(responseBody === undefined ? {} : { responseBody }),
    });

  test("the HTTP status is the code and the body's explanation the message", () => {
    const error = toModelCallError(apiError(502, '{"error":{"message":"upstream timed out"}}'), "openai");
    expect([error.message, error.status]).toEqual(["upstream timed out", "502"]);
    expect(classifyTurnFailure(error.message, error.status).kind).toBe("transient_network");
  });

  test("no body explanation keeps the SDK's message", () => {
    expect(toModelCallError(apiError(502, "<html>bad gateway</html>"), "openai").message).toBe("Bad Gateway");
  });

  test("stream error codes without a status map to the status they stand for", () => {
    const cases: Array<[StreamProviderError, TurnErrorKind]> = [
      [new StreamProviderError({ message: "slow down", type: "rate_limit_error" }), "rate_limited"],
      [new StreamProviderError({ message: "bad key", code: "invalid_api_key" }), "auth_error"],
      [new StreamProviderError({ message: "busy", type: "overloaded_error" }), "transient_network"],
      [new StreamProviderError({ message: "gone", statusCode: 404 }), "model_not_found"],
    ];
    for (const [error, kind] of cases) {
      const mapped = toModelCallError(error, "anthropic");
      expect(classifyTurnFailure(mapped.message, mapped.status).kind).toBe(kind);
    }
  });

  test("a retry wrapper is unwrapped to its last error", () => {
    const wrapped = new RetryError({
      message: "failed after 1 attempt",
      reason: "maxRetriesExceeded",
      errors: [apiError(429)],
    });
    expect(toModelCallError(wrapped, "google").status).toBe("429");
  });

  test("a ModelCallError passes through; anything else keeps its message and has no code", () => {
    const own = new ModelCallError("mine", "CONFIG");
    expect(toModelCallError(own, "openai")).toBe(own);
    const other = toModelCallError(new TypeError("boom"), "openai");
    expect([other.message, other.status]).toEqual(["boom", undefined]);
    expect(toModelCallError({ message: "raw part", type: "rate_limit_error" }, "anthropic").status).toBe("429");
  });
});
