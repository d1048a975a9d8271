/**
 * The rates shipped with this build, USD per million tokens, from the providers' public price
 * pages (standard tier, prompts up to 200k tokens; batch, priority and long-context tiers are not
 * modelled). Cache write is listed only where the provider bills writes per token (Anthropic's
 * 5-minute cache: 1.25x input); elsewhere a write bills at the input rate. OpenAI-compatible
 * endpoints have no shipped rates: set them with `POST /pricing/set` or a pricing source.
 * Data only; `POST /pricing/refresh` replaces what goes stale.
 */
import type { ModelRates } from "../core/usage.ts";

/** When these rates were last checked against the providers' pages. */
export const SHIPPED_RATES_AT = "2025-11-20T00:00:00Z";

type Row = readonly [model: string, input: number, cached: number, cacheWrite: number | undefined, output: number];

const OPENAI: readonly Row[] = [
  ["gpt-5.1", 1.25, 0.125, undefined, 10],
  ["gpt-5", 1.25, 0.125, undefined, 10],
  ["gpt-5-mini", 0.25, 0.025, undefined, 2],
  ["gpt-5-nano", 0.05, 0.005, undefined, 0.4],
  ["gpt-4.1", 2, 0.5, undefined, 8],
  ["gpt-4.1-mini", 0.4, 0.1, undefined, 1.6],
  ["gpt-4.1-nano", 0.1, 0.025, undefined, 0.4],
  ["gpt-4o", 2.5, 1.25, undefined, 10],
  ["gpt-4o-mini", 0.15, 0.075, undefined, 0.6],
  ["o3", 2, 0.5, undefined, 8],
  ["o4-mini", 1.1, 0.275, undefined, 4.4],
];

const ANTHROPIC: readonly Row[] = [
  ["claude-opus-4-5", 5, 0.5, 6.25, 25],
  ["claude-opus-4-1", 15, 1.5, 18.75, 75],
  ["claude-opus-4-0", 15, 1.5, 18.75, 75],
  ["claude-opus-4", 15, 1.5, 18.75, 75],
  ["claude-sonnet-4-5", 3, 0.3, 3.75, 15],
  ["claude-sonnet-4-0", 3, 0.3, 3.75, 15],
  ["claude-sonnet-4", 3, 0.3, 3.75, 15],
  ["claude-3-7-sonnet", 3, 0.3, 3.75, 15],
  ["claude-3-7-sonnet-latest", 3, 0.3, 3.75, 15],
  ["claude-haiku-4-5", 1, 0.1, 1.25, 5],
  ["claude-3-5-haiku", 0.8, 0.08, 1, 4],
  ["claude-3-5-haiku-latest", 0.8, 0.08, 1, 4],
];

const GOOGLE: readonly Row[] = [
  ["gemini-3-pro-preview", 2, 0.2, undefined, 12],
  ["gemini-2.5-pro", 1.25, 0.125, undefined, 10],
  ["gemini-2.5-flash", 0.3, 0.03, undefined, 2.5],
  ["gemini-2.5-flash-lite", 0.1, 0.01, undefined, 0.4],
  ["gemini-2.0-flash", 0.1, 0.025, undefined, 0.4],
  ["gemini-2.0-flash-lite", 0.075, 0.075, undefined, 0.3],
];

function toRates([, input, cached, cacheWrite, output]: Row): ModelRates {
  const rates: ModelRates = { inputUsdPerMTok: input, outputUsdPerMTok: output, cachedUsdPerMTok: cached };
  if (cacheWrite !== undefined) rates.cacheWriteUsdPerMTok = cacheWrite;
  return rates;
}

/** Shipped rates by model id, per provider (for docs and tests) and merged. */
export const SHIPPED_RATES_BY_PROVIDER: Readonly<
  Record<"openai" | "anthropic" | "google" | "openai-compatible", ReadonlyMap<string, ModelRates>>
> = {
  openai: new Map(OPENAI.map((row) => [row[0], toRates(row)])),
  anthropic: new Map(ANTHROPIC.map((row) => [row[0], toRates(row)])),
  google: new Map(GOOGLE.map((row) => [row[0], toRates(row)])),
  "openai-compatible": new Map(),
};

export const SHIPPED_RATES: ReadonlyMap<string, ModelRates> = new Map(
  Object.values(SHIPPED_RATES_BY_PROVIDER).flatMap((rates) => [...rates]),
);
