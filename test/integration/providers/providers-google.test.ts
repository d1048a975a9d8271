/**
 * `spar agent --provider=google` against a local fake of Gemini's streamGenerateContent, key in
 * the provider's usual variable GOOGLE_GENERATIVE_AI_API_KEY. Gemini bills no per-token cache
 * write, so that key is omitted. Usage and cost computed by hand from the fixtures.
 */
import { describeProviderEndToEnd } from "../../fakes/providers/e2e-suite.ts";

describeProviderEndToEnd({
  provider: "google",
  model: "gemini-2.5-flash",
  keyEnv: "GOOGLE_GENERATIVE_AI_API_KEY",
  keyFlag: false,
  // Rates per million tokens: input 0.30, cached 0.03, output 2.50.
  rates: { inputUsdPerMTok: 0.3, cachedUsdPerMTok: 0.03, outputUsdPerMTok: 2.5 },
  // text.sse: prompt 3000 including 2048 cached; candidates 50, thoughts 120 (billed as output).
  // cost = (952*0.3 + 2048*0.03 + 170*2.5) / 1e6 = (285.6 + 61.44 + 425) / 1e6; reference = (900 + 425) / 1e6
  textTurn: {
    input_tokens: 3000,
    input_tokens_cached: 2048,
    input_tokens_uncached: 952,
    output_tokens: 50,
    thoughts_tokens: 120,
    total_tokens: 3170,
    cost_usd: 0.00077204,
    cost_usd_uncached_reference: 0.001325,
  },
  // tool-call.sse (900 in, 18 out, 64 thoughts) + text.sse: 3900 in = 2048 cached + 1852 uncached; 68 out, 184 thoughts.
  // cost = (1852*0.3 + 2048*0.03 + 252*2.5) / 1e6 = (555.6 + 61.44 + 630) / 1e6; reference = (1170 + 630) / 1e6
  toolTurn: {
    input_tokens: 3900,
    input_tokens_cached: 2048,
    input_tokens_uncached: 1852,
    output_tokens: 68,
    thoughts_tokens: 184,
    total_tokens: 4152,
    cost_usd: 0.00124704,
    cost_usd_uncached_reference: 0.0018,
  },
});
