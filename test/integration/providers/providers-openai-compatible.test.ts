/**
 * `spar agent --provider=openai-compatible` against a local chat-completions fake, key in a
 * variable named with --model-api-key-env (compatible servers have no usual one). Usage and cost
 * computed by hand from the fixtures, cache writes from `prompt_tokens_details.cache_write_tokens`.
 */
import { describeProviderEndToEnd } from "../../fakes/providers/e2e-suite.ts";

describeProviderEndToEnd({
  provider: "openai-compatible",
  model: "qwen3-coder-30b",
  keyEnv: "LOCAL_LLM_KEY",
  keyFlag: true,
  // Rates per million tokens: input 0.60, cached 0.06, cache write 0.75, output 2.40.
  rates: { inputUsdPerMTok: 0.6, cachedUsdPerMTok: 0.06, cacheWriteUsdPerMTok: 0.75, outputUsdPerMTok: 2.4 },
  // text.sse: prompt 1500 = 1024 cached + 200 cache write + 276 uncached; completion 80 = 50 + 30 reasoning.
  // cost = (276*0.6 + 1024*0.06 + 200*0.75 + 80*2.4) / 1e6; reference = (1500*0.6 + 192) / 1e6
  textTurn: {
    input_tokens: 1500,
    input_tokens_cached: 1024,
    input_tokens_cache_write: 200,
    input_tokens_uncached: 276,
    output_tokens: 50,
    thoughts_tokens: 30,
    total_tokens: 1580,
    cost_usd: 0.00056904,
    cost_usd_uncached_reference: 0.001092,
  },
  // tool-call.sse (700 in, 512 cached, 22 out) + text.sse: 2200 in = 1536 cached + 200 write + 464 uncached.
  // cost = (464*0.6 + 1536*0.06 + 200*0.75 + 102*2.4) / 1e6 = (278.4 + 92.16 + 150 + 244.8) / 1e6
  // reference = (2200*0.6 + 244.8) / 1e6
  toolTurn: {
    input_tokens: 2200,
    input_tokens_cached: 1536,
    input_tokens_cache_write: 200,
    input_tokens_uncached: 464,
    output_tokens: 72,
    thoughts_tokens: 30,
    total_tokens: 2302,
    cost_usd: 0.00076536,
    cost_usd_uncached_reference: 0.0015648,
  },
});
