/**
 * Pricing documents a refresh reads, validated with valibot, and the rate fields
 * `POST /pricing/set` shares with them. Two formats are accepted:
 *
 * - spar's own, version 1: `{"version": 1, "models": {"<model id>": {"input_usd_per_mtok": 2.5,
 *   "output_usd_per_mtok": 10, "cached_usd_per_mtok"?: 1.25, "cache_write_usd_per_mtok"?: 3.75}}}`
 * - LiteLLM's `model_prices_and_context_window.json` map (USD per token:
 *   `input_cost_per_token`, `output_cost_per_token`, `cache_read_input_token_cost`,
 *   `cache_creation_input_token_cost`), so a public, maintained price list works as a source.
 *
 * Entries that do not validate are skipped and named in the result; a document with no usable
 * entry is an error. Unknown fields are tolerated. Owns no I/O.
 */
import * as v from "valibot";
import { type Result, err, ok } from "../core/result.ts";
import type { ModelRates } from "../core/usage.ts";

/** A rate in USD per million tokens: finite, at least 0, at most 1,000,000. */
export const rate = (field: string) =>
  v.pipe(
    v.number(`${field} must be a number (USD per million tokens)`),
    v.finite(`${field} must be finite`),
    v.minValue(0, `${field} must not be negative`),
    v.maxValue(1_000_000, `${field} must be at most 1000000`),
  );

/** The four rate fields of the wire (set body, spar documents). */
export const RateFields = {
  input_usd_per_mtok: rate("input_usd_per_mtok"),
  output_usd_per_mtok: rate("output_usd_per_mtok"),
  cached_usd_per_mtok: v.optional(rate("cached_usd_per_mtok")),
  cache_write_usd_per_mtok: v.optional(rate("cache_write_usd_per_mtok")),
};

const SparRates = v.object(RateFields);

export function ratesFromFields(fields: v.InferOutput<typeof SparRates>): ModelRates {
  const rates: ModelRates = {
    inputUsdPerMTok: fields.input_usd_per_mtok,
    outputUsdPerMTok: fields.output_usd_per_mtok,
  };
  if (fields.cached_usd_per_mtok !== undefined) rates.cachedUsdPerMTok = fields.cached_usd_per_mtok;
  if (fields.cache_write_usd_per_mtok !== undefined) rates.cacheWriteUsdPerMTok = fields.cache_write_usd_per_mtok;
  return rates;
}

const perToken = (field: string) =>
  v.pipe(v.number(`${field} must be a number`), v.finite(), v.minValue(0, `${field} must not be negative`));
const LiteLlmEntry = v.object({
  input_cost_per_token: perToken("input_cost_per_token"),
  output_cost_per_token: perToken("output_cost_per_token"),
  cache_read_input_token_cost: v.optional(v.nullable(perToken("cache_read_input_token_cost"))),
  cache_creation_input_token_cost: v.optional(v.nullable(perToken("cache_creation_input_token_cost"))),
});

/** USD per token to USD per million tokens, without float noise (2.5e-6 -> 2.5). */
function perMillion(usdPerToken: number): number {
  return Number((usdPerToken * 1_000_000).toPrecision(12));
}

function liteLlmRates(entry: v.InferOutput<typeof LiteLlmEntry>): ModelRates {
  const rates: ModelRates = {
    inputUsdPerMTok: perMillion(entry.input_cost_per_token),
    outputUsdPerMTok: perMillion(entry.output_cost_per_token),
  };
  if (typeof entry.cache_read_input_token_cost === "number")
    rates.cachedUsdPerMTok = perMillion(entry.cache_read_input_token_cost);
  if (typeof entry.cache_creation_input_token_cost === "number")
    rates.cacheWriteUsdPerMTok = perMillion(entry.cache_creation_input_token_cost);
  return rates;
}

export interface PricingDocument {
  format: "spar-v1" | "litellm";
  rates: Map<string, ModelRates>;
  /** Entries skipped, with the reason (first few only). */
  skipped: string[];
  skippedCount: number;
}

const MAX_NAMED_SKIPS = 5;
const MODEL_ID = /^[\x21-\x7e]{1,200}$/;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function collect<T extends v.GenericSchema>(
  entries: Record<string, unknown>,
  schema: T,
  toRates: (value: v.InferOutput<T>) => ModelRates,
  quiet: (value: unknown) => boolean,
): Omit<PricingDocument, "format"> {
  const rates = new Map<string, ModelRates>();
  const skipped: string[] = [];
  let skippedCount = 0;
  for (const [model, value] of Object.entries(entries)) {
    if (quiet(value)) continue;
    const parsed = v.safeParse(schema, value);
    if (parsed.success && MODEL_ID.test(model)) {
      rates.set(model, toRates(parsed.output));
      continue;
    }
    skippedCount++;
    const reason = parsed.success
      ? "model id must be 1-200 printable characters"
      : (parsed.issues[0]?.message ?? "invalid");
    if (skipped.length < MAX_NAMED_SKIPS) skipped.push(`${model}: ${reason}`);
  }
  return { rates, skipped, skippedCount };
}

/** Parse a fetched document (already JSON-decoded). */
export function parsePricingDocument(document: unknown): Result<PricingDocument> {
  if (!isObject(document)) return err("pricing document must be a JSON object");
  if ("version" in document || "models" in document) {
    if (document.version !== 1)
      return err(`pricing document version must be 1, got ${JSON.stringify(document.version)}`);
    if (!isObject(document.models))
      return err('pricing document field "models" must be an object of model id to rates');
    const found = collect(document.models, SparRates, ratesFromFields, () => false);
    if (found.rates.size === 0)
      return err(
        `pricing document has no usable model rates${found.skipped.length > 0 ? `: ${found.skipped.join("; ")}` : ""}`,
      );
    return ok({ format: "spar-v1", ...found });
  }
  // LiteLLM lists image, audio and embedding models too: entries without both token prices are not ours to judge.
  const notPriced = (value: unknown) =>
    !isObject(value) || !("input_cost_per_token" in value) || !("output_cost_per_token" in value);
  const found = collect(document, LiteLlmEntry, liteLlmRates, notPriced);
  if (found.rates.size === 0) {
    return err(
      `pricing document is neither spar's format ({"version":1,"models":{...}}) nor a LiteLLM price map with input_cost_per_token and output_cost_per_token`,
    );
  }
  return ok({ format: "litellm", ...found });
}
