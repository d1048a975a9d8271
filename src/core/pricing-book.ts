/**
 * PricingBook: per-model rates in three layers, looked up with the most specific first: rates
 * set at runtime (`POST /pricing/set`), then the last refresh from the configured source, then
 * the table shipped with the build. Model ids are matched exactly, then without a provider
 * prefix (`anthropic/`), then without a release-date suffix (`-20250929`, `-2024-08-06`).
 * Pure: times come in as arguments; no I/O.
 */
import type { ModelRates } from "./usage.ts";
import { ZERO_TIME } from "./zero-time.ts";

export type RateOrigin = "shipped" | "refresh" | "set";

export interface RateEntry {
  rates: ModelRates;
  /** RFC 3339: when these rates were published (shipped), fetched (refresh) or set. */
  updatedAt: string;
  origin: RateOrigin;
}

/** The wire form of one model's rates (GET /pricing `current`). */
export interface RatesBody {
  input_usd_per_mtok: number;
  output_usd_per_mtok: number;
  cached_usd_per_mtok?: number;
  cache_write_usd_per_mtok?: number;
  updated_at: string;
}

const DATE_SUFFIX = /-(?:\d{8}|\d{4}-\d{2}-\d{2})$/;

/** The keys a model id may be priced under, most specific first. */
export function pricingKeys(model: string): string[] {
  const exact = model.trim().toLowerCase();
  const slash = exact.lastIndexOf("/");
  const bare = slash >= 0 ? exact.slice(slash + 1) : exact;
  const keys = [exact, bare, exact.replace(DATE_SUFFIX, ""), bare.replace(DATE_SUFFIX, "")];
  return [...new Set(keys.filter((key) => key !== ""))];
}

function normalize(model: string): string {
  return model.trim().toLowerCase();
}

function sameRates(a: ModelRates | undefined, b: ModelRates): boolean {
  return (
    a !== undefined &&
    a.inputUsdPerMTok === b.inputUsdPerMTok &&
    a.outputUsdPerMTok === b.outputUsdPerMTok &&
    a.cachedUsdPerMTok === b.cachedUsdPerMTok &&
    a.cacheWriteUsdPerMTok === b.cacheWriteUsdPerMTok
  );
}

export class PricingBook {
  readonly #shipped = new Map<string, RateEntry>();
  #refreshed = new Map<string, RateEntry>();
  readonly #set = new Map<string, RateEntry>();

  constructor(shipped: ReadonlyMap<string, ModelRates> = new Map(), shippedAt = ZERO_TIME) {
    for (const [model, rates] of shipped)
      this.#shipped.set(normalize(model), { rates, updatedAt: shippedAt, origin: "shipped" });
  }

  /** The rates a model is billed at, or undefined (priced 0). */
  lookup(model: string): RateEntry | undefined {
    const keys = pricingKeys(model);
    for (const layer of [this.#set, this.#refreshed, this.#shipped]) {
      for (const key of keys) {
        const entry = layer.get(key);
        if (entry) return entry;
      }
    }
    return undefined;
  }

  /** Rates set at runtime; they win over refreshed and shipped ones for this model id. */
  set(model: string, rates: ModelRates, at: string): void {
    this.#set.set(normalize(model), { rates, updatedAt: at, origin: "set" });
  }

  /**
   * Replace the refreshed layer with a new document's rates. Returns how many models now bill
   * differently than before (new or changed rates).
   */
  replaceRefreshed(rates: ReadonlyMap<string, ModelRates>, at: string): number {
    let updated = 0;
    const next = new Map<string, RateEntry>();
    for (const [model, value] of rates) {
      const key = normalize(model);
      if (!sameRates(this.lookup(key)?.rates, value)) updated++;
      next.set(key, { rates: value, updatedAt: at, origin: "refresh" });
    }
    this.#refreshed = next;
    return updated;
  }

  /** Distinct model ids with rates in any layer. */
  get knownModels(): number {
    return new Set([...this.#shipped.keys(), ...this.#refreshed.keys(), ...this.#set.keys()]).size;
  }
}

export function ratesBody(entry: RateEntry): RatesBody {
  const body: RatesBody = {
    input_usd_per_mtok: entry.rates.inputUsdPerMTok,
    output_usd_per_mtok: entry.rates.outputUsdPerMTok,
    updated_at: entry.updatedAt,
  };
  if (entry.rates.cachedUsdPerMTok !== undefined) body.cached_usd_per_mtok = entry.rates.cachedUsdPerMTok;
  if (entry.rates.cacheWriteUsdPerMTok !== undefined) body.cache_write_usd_per_mtok = entry.rates.cacheWriteUsdPerMTok;
  return body;
}
