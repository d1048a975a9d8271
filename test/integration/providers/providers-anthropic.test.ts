/**
 * `spar agent --provider=anthropic` against a local fake of the Messages API, key in the
 * provider's usual variable ANTHROPIC_API_KEY. Usage and cost computed by hand from the fixtures.
 */
import { describeProviderEndToEnd } from "../../fakes/providers/e2e-suite.ts";

describeProviderEndToEnd({
  provider: "anthropic",
  model: "claude-sonnet-4-5",
  keyEnv: "ANTHROPIC_API_KEY",
  keyFlag: false,
  // Rates per million tokens: input 3, cache read 0.30, cache write 3.75, output 15.
  rates: { inputUsdPerMTok: 3, cachedUsdPerMTok: 0.3, cacheWriteUsdPerMTok: 3.75, outputUsdPerMTok: 15 },
  // text.sse: input_tokens 20 + cache_read 4000 + cache_creation 1000 = 5020; output 60 (no thoughts reported).
  // cost = (20*3 + 4000*0.3 + 1000*3.75 + 60*15) / 1e6; reference = (5020*3 + 900) / 1e6
  textTurn: {
    input_tokens: 5020,
    input_tokens_cached: 4000,
    input_tokens_cache_write: 1000,
    input_tokens_uncached: 20,
    output_tokens: 60,
    total_tokens: 5080,
    cost_usd: 0.00591,
    cost_usd_uncached_reference: 0.01596,
  },
  // tool-call.sse (350 + 5000 read, 72 out) + text.sse: 10370 in = 9000 read + 1000 write + 370 uncached, 132 out.
  // cost = (370*3 + 9000*0.3 + 1000*3.75 + 132*15) / 1e6 = (1110 + 2700 + 3750 + 1980) / 1e6
  // reference = (10370*3 + 1980) / 1e6
  toolTurn: {
    input_tokens: 10370,
    input_tokens_cached: 9000,
    input_tokens_cache_write: 1000,
    input_tokens_uncached: 370,
    output_tokens: 132,
    total_tokens: 10502,
    cost_usd: 0.00954,
    cost_usd_uncached_reference: 0.03309,
  },
});
