/**
 * `spar agent --provider=openai` against a local fake of the OpenAI Responses API, key in the
 * provider's usual variable OPENAI_API_KEY. Usage and cost computed by hand from the fixtures.
 */
import { describeProviderEndToEnd } from "../../fakes/providers/e2e-suite.ts";

describeProviderEndToEnd({
  provider: "openai",
  model: "gpt-5-mini",
  keyEnv: "OPENAI_API_KEY",
  keyFlag: false,
  // Rates per million tokens: input 1.25, cached 0.125, cache write 1.25, output 10.
  rates: { inputUsdPerMTok: 1.25, cachedUsdPerMTok: 0.125, cacheWriteUsdPerMTok: 1.25, outputUsdPerMTok: 10 },
  // text.sse: input 2000 = 1200 cached + 300 cache write + 500 uncached; output 150 = 110 + 40 reasoning.
  // cost = (500*1.25 + 1200*0.125 + 300*1.25 + 150*10) / 1e6; reference = (2000*1.25 + 1500) / 1e6
  textTurn: {
    input_tokens: 2000,
    input_tokens_cached: 1200,
    input_tokens_cache_write: 300,
    input_tokens_uncached: 500,
    output_tokens: 110,
    thoughts_tokens: 40,
    total_tokens: 2150,
    cost_usd: 0.00265,
    cost_usd_uncached_reference: 0.004,
  },
  // tool-call.sse (1800 in, 1024 cached, 24 out) + text.sse: 3800 in = 2224 cached + 300 write + 1276 uncached.
  // cost = (1276*1.25 + 2224*0.125 + 300*1.25 + (134+40)*10) / 1e6 = (1595 + 278 + 375 + 1740) / 1e6
  // reference = (3800*1.25 + 1740) / 1e6
  toolTurn: {
    input_tokens: 3800,
    input_tokens_cached: 2224,
    input_tokens_cache_write: 300,
    input_tokens_uncached: 1276,
    output_tokens: 134,
    thoughts_tokens: 40,
    total_tokens: 3974,
    cost_usd: 0.003988,
    cost_usd_uncached_reference: 0.00649,
  },
});
