/**
 * PricingTable: the daemon's one price list, shared by every session. Layers (most specific
 * first): rates set at runtime with `POST /pricing/set` (live only: a restart forgets them), the
 * last refresh from the configured source (a URL or a file), the table shipped with the build.
 * Echo and scripted have no shipped rates, so they cost nothing until a rate is set (D14).
 * Costs already committed keep the price they were committed at; only later calls see a change.
 */
import { PricingBook, type RatesBody, ratesBody } from "../core/pricing-book.ts";
import { SparError } from "../core/errors.ts";
import type { ModelRates } from "../core/usage.ts";
import { type PricingSource, describeSource, loadPricingDocument } from "../pricing/pricing-source.ts";
import { SHIPPED_RATES, SHIPPED_RATES_AT } from "../pricing/shipped-rates.ts";
import { ZERO_TIME } from "../core/zero-time.ts";

/** GET /pricing's body (docs/attach-api.md#endpoints); `rate` is the same object as `current`, or null. */
export interface PricingInfo {
  source: string;
  last_refresh: string;
  known_models: number;
  current_model?: string;
  current?: RatesBody & { origin: string };
  rate: (RatesBody & { origin: string }) | null;
}

/** POST /pricing/refresh. */
export interface RefreshResult {
  updated: number;
  known_models: number;
  last_refresh: string;
  detail?: string;
}

export interface PricingTableOptions {
  /** Start from the shipped table (default true). */
  shipped?: boolean;
  /** Where /pricing/refresh reads; none: refresh answers 501. */
  source?: PricingSource;
  now?: () => Date;
}

export class PricingTable {
  readonly #book: PricingBook;
  readonly #source: PricingSource | undefined;
  readonly #now: () => Date;
  #lastRefresh = ZERO_TIME;
  /** One refresh at a time; concurrent callers share it. */
  #refreshing: Promise<RefreshResult> | undefined;

  constructor(options: PricingTableOptions = {}) {
    this.#book = options.shipped === false ? new PricingBook() : new PricingBook(SHIPPED_RATES, SHIPPED_RATES_AT);
    this.#source = options.source;
    this.#now = options.now ?? (() => new Date());
  }

  /** The rates a model is billed at now; undefined prices it at 0. */
  rates(model: string): ModelRates | undefined {
    return this.#book.lookup(model)?.rates;
  }

  /** Set a model's rates for the rest of this process's life. */
  set(model: string, rates: ModelRates): void {
    this.#book.set(model, rates, this.#now().toISOString());
  }

  get hasSource(): boolean {
    return this.#source !== undefined;
  }

  /** GET /pricing for a session running `model`. */
  info(model: string | undefined): PricingInfo {
    const info: PricingInfo = {
      source: this.#source ? describeSource(this.#source) : "shipped",
      last_refresh: this.#lastRefresh,
      known_models: this.#book.knownModels,
      rate: null,
    };
    if (model === undefined) return info;
    info.current_model = model;
    const entry = this.#book.lookup(model);
    if (entry) {
      info.current = { ...ratesBody(entry), origin: entry.origin };
      info.rate = info.current;
    }
    return info;
  }

  /**
   * Read the source and replace the refreshed layer. A source that cannot be read or parsed
   * changes nothing: the answer says so in `detail` (updated 0, last_refresh unchanged).
   * Throws `not_implemented` when no source is configured.
   */
  refresh(): Promise<RefreshResult> {
    const source = this.#source;
    if (!source)
      return Promise.reject(
        new SparError(
          "not_implemented",
          "this daemon has no pricing source: start it with --pricing-source=<URL or file> (config pricing.source)",
        ),
      );
    this.#refreshing ??= this.#refreshFrom(source).finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  async #refreshFrom(source: PricingSource): Promise<RefreshResult> {
    const document = await loadPricingDocument(source);
    if (!document.ok) {
      return {
        updated: 0,
        known_models: this.#book.knownModels,
        last_refresh: this.#lastRefresh,
        detail: `refresh failed, rates unchanged: ${document.error}`,
      };
    }
    const at = this.#now().toISOString();
    const updated = this.#book.replaceRefreshed(document.value.rates, at);
    this.#lastRefresh = at;
    const result: RefreshResult = { updated, known_models: this.#book.knownModels, last_refresh: at };
    if (document.value.skippedCount > 0) {
      result.detail = `${document.value.rates.size} models read; ${document.value.skippedCount} entries skipped (${document.value.skipped.join("; ")})`;
    }
    return result;
  }
}
