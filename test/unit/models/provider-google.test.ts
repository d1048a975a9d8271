/**
 * @ai-sdk/google against a fake speaking Gemini's streamGenerateContent SSE wire with recorded
 * bodies, plus Gemini's way of refusing a bad key: 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { classifyTurnFailure } from "../../../src/core/turn-errors.ts";
import { callModel, remoteModel } from "../../fakes/providers/model-call.ts";
import { type ProviderFake, startProviderFake } from "../../fakes/providers/provider-fake.ts";
import { describeProviderWire } from "../../fakes/providers/wire-suite.ts";

// Rates per million tokens: input 0.30, cached 0.03, output 2.50 (Gemini bills no per-token cache write).
const rates = { inputUsdPerMTok: 0.3, cachedUsdPerMTok: 0.03, outputUsdPerMTok: 2.5 };

describeProviderWire({
  provider: "google",
  model: "gemini-2.5-flash",
  // promptTokenCount 3000 including cachedContentTokenCount 2048: uncached 952.
  // candidatesTokenCount 50, thoughtsTokenCount 120 (billed as output), totalTokenCount 3170.
  // cost = (952*0.3 + 2048*0.03 + (50+120)*2.5) / 1e6 = (285.6 + 61.44 + 425) / 1e6
  // reference = (3000*0.3 + 425) / 1e6 = (900 + 425) / 1e6
  text: {
    usage: {
      inputTokens: 3000,
      cachedInputTokens: 2048,
      cacheWriteInputTokens: 0,
      outputTokens: 50,
      thoughtsTokens: 120,
      toolUseTokens: 0,
      totalTokens: 3170,
    },
    rates,
    costUsd: 0.00077204,
    costUsdUncachedReference: 0.001325,
  },
  // prompt 900, candidates 18, thoughts 64: cost = (900*0.3 + (18+64)*2.5) / 1e6 = (270 + 205) / 1e6, nothing cached.
  toolCall: {
    callId: /.+/,
    text: "",
    usage: {
      inputTokens: 900,
      cachedInputTokens: 0,
      cacheWriteInputTokens: 0,
      outputTokens: 18,
      thoughtsTokens: 64,
      toolUseTokens: 0,
      totalTokens: 982,
    },
    rates,
    costUsd: 0.000475,
    costUsdUncachedReference: 0.000475,
  },
});

describe("google specifics", () => {
  let fake: ProviderFake;
  beforeAll(() => {
    process.env.SPAR_TEST_GOOGLE_SPECIFIC_KEY = "k";
    fake = startProviderFake("google");
  });
  afterAll(() => {
    fake.stop();
    delete process.env.SPAR_TEST_GOOGLE_SPECIFIC_KEY;
  });
  const spec = () => ({
    provider: "google" as const,
    name: "gemini-2.5-flash",
    baseUrl: fake.baseUrl,
    apiKeyEnv: "SPAR_TEST_GOOGLE_SPECIFIC_KEY",
  });

  test("a recorded 401 UNAUTHENTICATED is auth_error", async () => {
    fake.enqueue("401");
    const result = await callModel(await remoteModel(spec()));
    expect(result.error?.status).toBe("401");
    expect(classifyTurnFailure(result.error?.message ?? "", result.error?.status)).toMatchObject({
      kind: "auth_error",
      retryable: false,
    });
  });

  test("400 API_KEY_INVALID is auth_error, not config_error", async () => {
    fake.enqueue("400-api-key-invalid");
    const result = await callModel(await remoteModel(spec()));
    expect(result.error?.status).toBe("UNAUTHENTICATED");
    expect(classifyTurnFailure(result.error?.message ?? "", result.error?.status).kind).toBe("auth_error");
  });

  test("the model id is in the URL path and the stream is requested as SSE", async () => {
    fake.enqueue("text");
    await callModel(await remoteModel(spec()));
    const request = fake.requests[fake.requests.length - 1];
    expect(request?.path).toBe("/v1beta/models/gemini-2.5-flash:streamGenerateContent");
    expect(request?.search).toBe("?alt=sse");
  });
});
