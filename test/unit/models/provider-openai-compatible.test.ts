/**
 * @ai-sdk/openai-compatible against a fake speaking OpenAI chat-completions SSE with recorded
 * bodies, plus what compatible servers add: `cache_write_tokens` in prompt_tokens_details (the
 * SDK drops it; spar maps it), a server without any key, and a vLLM-style 404 body.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { callModel, remoteModel } from "../../fakes/providers/model-call.ts";
import { type ProviderFake, startProviderFake } from "../../fakes/providers/provider-fake.ts";
import { describeProviderWire } from "../../fakes/providers/wire-suite.ts";

// Rates per million tokens: input 0.60, cached 0.06, cache write 0.75, output 2.40.
const rates = { inputUsdPerMTok: 0.6, cachedUsdPerMTok: 0.06, cacheWriteUsdPerMTok: 0.75, outputUsdPerMTok: 2.4 };

describeProviderWire({
  provider: "openai-compatible",
  model: "qwen3-coder-30b",
  // prompt_tokens 1500 with cached_tokens 1024 and cache_write_tokens 200 inside it: uncached 276.
  // completion_tokens 80 with reasoning_tokens 30: output 50, thoughts 30.
  // cost = (276*0.6 + 1024*0.06 + 200*0.75 + 80*2.4) / 1e6 = (165.6 + 61.44 + 150 + 192) / 1e6
  // reference = (1500*0.6 + 192) / 1e6 = (900 + 192) / 1e6
  text: {
    usage: {
      inputTokens: 1500,
      cachedInputTokens: 1024,
      cacheWriteInputTokens: 200,
      outputTokens: 50,
      thoughtsTokens: 30,
      toolUseTokens: 0,
      totalTokens: 1580,
    },
    rates,
    costUsd: 0.00056904,
    costUsdUncachedReference: 0.001092,
  },
  // prompt 700 with 512 cached: uncached 188; cost = (188*0.6 + 512*0.06 + 22*2.4) / 1e6 = (112.8 + 30.72 + 52.8) / 1e6
  // reference = (700*0.6 + 52.8) / 1e6 = (420 + 52.8) / 1e6
  toolCall: {
    callId: "call_7Hn2KdLq9Vx4Rt1Ws8Yz",
    text: "",
    usage: {
      inputTokens: 700,
      cachedInputTokens: 512,
      cacheWriteInputTokens: 0,
      outputTokens: 22,
      thoughtsTokens: 0,
      toolUseTokens: 0,
      totalTokens: 722,
    },
    rates,
    costUsd: 0.00019632,
    costUsdUncachedReference: 0.0004728,
  },
});

describe("openai-compatible specifics", () => {
  let fake: ProviderFake;
  beforeAll(() => {
    fake = startProviderFake("openai-compatible");
  });
  afterAll(() => fake.stop());

  test("a local server needs no key: without --model-api-key-env no Authorization is sent", async () => {
    fake.enqueue("text");
    const result = await callModel(
      await remoteModel({ provider: "openai-compatible", name: "local-model", baseUrl: fake.baseUrl }),
    );
    expect(result.error).toBeUndefined();
    expect(result.text).toBe("Hello! spar is listening.");
    const request = fake.requests[fake.requests.length - 1];
    expect(request?.headers.authorization).toBeUndefined();
    expect(request?.body.stream_options).toEqual({ include_usage: true });
  });

  test("no base URL is a config error naming the flag", async () => {
    const result = await callModel(await remoteModel({ provider: "openai-compatible", name: "local-model" }));
    expect(result.error?.status).toBe("CONFIG");
    expect(result.error?.message).toContain("--model-base-url");
  });
});
