/**
 * Pricing over HTTP, on every session path (the price list itself is the daemon's, one for all
 * sessions): GET /pricing (SessionRead), POST /pricing/set (SessionWrite, and an admin caller
 * when callers are told apart: the book is every tenant's; 204) and
 * POST /pricing/refresh (SessionWrite; per-caller cost limiter, 429 with retry_after_seconds).
 * Without a pricing table in the context, reads answer the zero body and writes 501.
 */
import * as v from "valibot";
import { SparError } from "../../core/errors.ts";
import { RateFields, ratesFromFields } from "../../pricing/pricing-document.ts";
import { CallerLimiter } from "../../pricing/refresh-limiter.ts";
import { json } from "../http/responses.ts";
import type { AttachContext } from "./attach-context.ts";
import { requiredBody } from "./route-body.ts";
import type { RouteTable } from "./route-table.ts";

/**
 * POST /pricing/set: `{model, input_usd_per_mtok, output_usd_per_mtok, cached_usd_per_mtok?,
 * cache_write_usd_per_mtok?}`, rates in USD per million tokens (cached and cache write default
 * to the input rate).
 */
export const SetPricingBody = v.object(
  {
    model: v.pipe(
      v.string("model must be a string"),
      v.trim(),
      v.minLength(1, "model must not be empty"),
      v.maxLength(200, "model must be at most 200 characters"),
    ),
    ...RateFields,
  },
  "the body must be a JSON object {model, input_usd_per_mtok, output_usd_per_mtok, cached_usd_per_mtok?, cache_write_usd_per_mtok?}",
);

const ZERO_TIME = "0001-01-01T00:00:00Z";

export function registerPricingRoutes(table: RouteTable, context: AttachContext): void {
  const service = context.sessions;
  const pricing = context.pricing;
  const limiter = new CallerLimiter();

  table.session("GET", "pricing", async (route) => {
    await service.authorize(route, route.caller, "read");
    if (!pricing) return json(200, { source: "", last_refresh: ZERO_TIME, known_models: 0, rate: null });
    return json(200, pricing.info(context.daemon.model));
  });

  table.session("POST", "pricing/set", async (route) => {
    await service.authorize(route, route.caller, "write");
    if (!pricing) throw new SparError("not_implemented", "this daemon has no pricing controller");
    // The price book is the daemon's, every tenant's costs and ceilings read it: with per-caller
    // auth only an admin may change it.
    if (context.identitiesRequired && !route.caller.admin) {
      throw new SparError(
        "forbidden",
        "the price list is daemon-wide (every session's cost and ceilings use it): only an admin may set a price on a daemon with per-caller auth",
      );
    }
    const body = await requiredBody(route, SetPricingBody);
    pricing.set(body.model, ratesFromFields(body));
    return new Response(null, { status: 204 });
  });

  table.session("POST", "pricing/refresh", async (route) => {
    await service.authorize(route, route.caller, "write");
    if (!pricing?.hasSource)
      throw new SparError(
        "not_implemented",
        "this daemon has no pricing source: start it with --pricing-source=<URL or file> (config pricing.source)",
      );
    const admission = limiter.take(route.caller.identity, Date.now());
    if (!admission.ok) {
      return json(
        429,
        { error: "rate limited", retry_after_seconds: admission.retryAfterSeconds },
        { "retry-after": String(admission.retryAfterSeconds) },
      );
    }
    return json(200, await pricing.refresh());
  });
}
