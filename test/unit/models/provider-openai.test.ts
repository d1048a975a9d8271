/**
 * @ai-sdk/openai (Responses API, the provider's default) against a fake speaking the Responses
 * SSE wire with recorded bodies. Usage and cost below are computed by hand from the fixtures.
 */
import { describeProviderWire } from "../../fakes/providers/wire-suite.ts";

// Rates per million tokens: input 1.25, cached 0.125, cache write 1.25, output 10.
const rates = { inputUsdPerMTok: 1.25, cachedUsdPerMTok: 0.125, cacheWriteUsdPerMTok: 1.25, outputUsdPerMTok: 10 };

describeProviderWire({
  provider: "openai",
  model: "gpt-5-mini",
  // input_tokens 2000 with cached_tokens 1200 and cache_write_tokens 300 (both inside it): uncached 500.
  // output_tokens 150 of which reasoning_tokens 40: output 110, thoughts 40.
  // cost = (500*1.25 + 1200*0.125 + 300*1.25 + (110+40)*10) / 1e6 = (625 + 150 + 375 + 1500) / 1e6
  // reference = (2000*1.25 + 1500) / 1e6
  text: {
    usage: {
      inputTokens: 2000,
      cachedInputTokens: 1200,
      cacheWriteInputTokens: 300,
      outputTokens: 110,
      thoughtsTokens: 40,
      toolUseTokens: 0,
      totalTokens: 2150,
    },
    rates,
    costUsd: 0.00265,
    costUsdUncachedReference: 0.004,
  },
  // input 1800, cached 1024, uncached 776; output 24.
  // cost = (776*1.25 + 1024*0.125 + 24*10) / 1e6 = (970 + 128 + 240) / 1e6; reference = (2250 + 240) / 1e6
  toolCall: {
    callId: "call_Qm8yVb3nT4hK2pX9rL6sW1dZ",
    text: "",
    usage: {
      inputTokens: 1800,
      cachedInputTokens: 1024,
      cacheWriteInputTokens: 0,
      outputTokens: 24,
      thoughtsTokens: 0,
      toolUseTokens: 0,
      totalTokens: 1824,
    },
    rates,
    costUsd: 0.001338,
    costUsdUncachedReference: 0.00249,
  },
});
