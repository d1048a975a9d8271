/**
 * PricingTable: per-model rates the daemon prices usage with. Echo and scripted cost nothing
 * unless a rate is set (D14). Filled further by the pricing issue (shipped table, refresh).
 */
import type { ModelRates } from "../core/usage.ts";

export class PricingTable {
  readonly #rates = new Map<string, ModelRates>();

  rates(model: string): ModelRates | undefined {
    return this.#rates.get(model);
  }

  set(model: string, rates: ModelRates): void {
    this.#rates.set(model, rates);
  }
}
