/**
 * @ai-sdk/anthropic against a fake speaking the Messages SSE wire with recorded bodies, plus the
 * Anthropic-only cases: 529 overloaded, an error event inside an open stream, and a full context
 * window (which the SDK reports as `length` but is not the output cap).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { classifyTurnFailure } from "../../../src/core/turn-errors.ts";
import { callModel, remoteModel } from "../../fakes/providers/model-call.ts";
import { type ProviderFake, startProviderFake } from "../../fakes/providers/provider-fake.ts";
import { describeProviderWire } from "../../fakes/providers/wire-suite.ts";

// Rates per million tokens: input 3, cache read 0.30, cache write 3.75, output 15.
const rates = { inputUsdPerMTok: 3, cachedUsdPerMTok: 0.3, cacheWriteUsdPerMTok: 3.75, outputUsdPerMTok: 15 };

describeProviderWire({
  provider: "anthropic",
  model: "claude-sonnet-4-5",
  // input_tokens 20 + cache_read_input_tokens 4000 + cache_creation_input_tokens 1000 = input 5020.
  // cost = (20*3 + 4000*0.3 + 1000*3.75 + 60*15) / 1e6 = (60 + 1200 + 3750 + 900) / 1e6
  // reference = (5020*3 + 900) / 1e6 = (15060 + 900) / 1e6
  text: {
    usage: {
      inputTokens: 5020,
      cachedInputTokens: 4000,
      cacheWriteInputTokens: 1000,
      outputTokens: 60,
      thoughtsTokens: 0,
      toolUseTokens: 0,
      totalTokens: 5080,
    },
    rates,
    costUsd: 0.00591,
    costUsdUncachedReference: 0.01596,
  },
  // 350 + 5000 read = 5350; cost = (350*3 + 5000*0.3 + 72*15) / 1e6 = (1050 + 1500 + 1080) / 1e6
  // reference = (5350*3 + 1080) / 1e6 = (16050 + 1080) / 1e6
  toolCall: {
    callId: "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
    text: "Let me read the README.",
    usage: {
      inputTokens: 5350,
      cachedInputTokens: 5000,
      cacheWriteInputTokens: 0,
      outputTokens: 72,
      thoughtsTokens: 0,
      toolUseTokens: 0,
      totalTokens: 5422,
    },
    rates,
    costUsd: 0.00363,
    costUsdUncachedReference: 0.01713,
  },
});

describe("anthropic specifics", () => {
  let fake: ProviderFake;
  const spec = () => ({
    provider: "anthropic" as const,
    name: "claude-sonnet-4-5",
    baseUrl: fake.baseUrl,
    apiKeyEnv: "SPAR_TEST_ANTHROPIC_SPECIFIC_KEY",
  });
  beforeAll(() => {
    process.env.SPAR_TEST_ANTHROPIC_SPECIFIC_KEY = "k";
    fake = startProviderFake("anthropic");
  });
  afterAll(() => {
    fake.stop();
    delete process.env.SPAR_TEST_ANTHROPIC_SPECIFIC_KEY;
  });

  test("529 overloaded is transient_network and retryable", async () => {
    fake.enqueue("529");
    const result = await callModel(await remoteModel(spec()));
    expect(result.error?.status).toBe("529");
    expect(classifyTurnFailure(result.error?.message ?? "", result.error?.status)).toMatchObject({
      kind: "transient_network",
      retryable: true,
      code: "529",
    });
  });

  test("an overloaded_error event inside an open stream fails the call as transient_network", async () => {
    fake.enqueue("stream-overloaded");
    const result = await callModel(await remoteModel(spec()));
    expect(result.deltas).toEqual(["Partial"]);
    expect(result.finish).toBeUndefined();
    expect(result.error?.message).toBe("Overloaded");
    expect(classifyTurnFailure(result.error?.message ?? "", result.error?.status).kind).toBe("transient_network");
  });

  test("a full context window is not the output cap: finish other, not length", async () => {
    fake.enqueue("context-window");
    const result = await callModel(await remoteModel(spec()));
    expect(result.finish?.finishReason).toBe("other");
  });

  test("max_tokens is the output cap: finish length", async () => {
    fake.enqueue("length");
    const result = await callModel(await remoteModel(spec()));
    expect(result.finish?.finishReason).toBe("length");
  });

  test("the system prompt travels as Anthropic's top-level system", async () => {
    fake.enqueue("text");
    await callModel(await remoteModel(spec()), undefined, [], { system: "You are spar's test agent." });
    expect(JSON.stringify(fake.requests[fake.requests.length - 1]?.body.system)).toContain(
      "You are spar's test agent.",
    );
  });
});
