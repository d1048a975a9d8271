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
import { Elysia } from "elysia";
import { withSession } from "./route-context.ts";
import { NoContent, responses } from "../http/wire-schemas.ts";
import { ZERO_TIME } from "../../core/zero-time.ts";

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

const PricingInfo = v.looseObject({
  source: v.string(),
  last_refresh: v.string(),
  known_models: v.number(),
  rate: v.unknown(),
});
const RefreshAnswer = v.looseObject({
  updated: v.number(),
  known_models: v.number(),
  last_refresh: v.string(),
  detail: v.optional(v.string()),
});
const PRICING = ["pricing"];

export function pricingRoutes(context: AttachContext) {
  const service = context.sessions;
  const pricing = context.pricing;
  const limiter = new CallerLimiter();
  return new Elysia({ name: "spar.attach.pricing" })
    .use(withSession)
    .get(
      "/pricing",
      async ({ target, caller }) => {
        await service.authorize(target, caller, "read");
        if (!pricing) return json(200, { source: "", last_refresh: ZERO_TIME, known_models: 0, rate: null });
        return json(200, pricing.info(context.daemon.model));
      },
      {
        response: responses({ 200: PricingInfo }, { extra: [404] }),
        detail: { summary: "The price list in use", tags: PRICING },
      },
    )
    .post(
      "/pricing/set",
      async ({ body, target, caller }) => {
        await service.authorize(target, caller, "write");
        if (!pricing) throw new SparError("not_implemented", "this daemon has no pricing controller");
        // The price book is the daemon's, every tenant's costs and ceilings read it: with per-caller
        // auth only an admin may change it.
        if (context.identitiesRequired && !caller.admin) {
          throw new SparError(
            "forbidden",
            "the price list is daemon-wide (every session's cost and ceilings use it): only an admin may set a price on a daemon with per-caller auth",
          );
        }
        pricing.set(body.model, ratesFromFields(body));
        return new Response(null, { status: 204 });
      },
      {
        parse: "json",
        body: SetPricingBody,
        response: responses({ 204: NoContent }, { body: true, extra: [404, 501] }),
        detail: {
          summary: "Set a model's price in the daemon-wide list (admins only with per-caller auth)",
          tags: PRICING,
        },
      },
    )
    .post(
      "/pricing/refresh",
      async ({ target, caller }) => {
        await service.authorize(target, caller, "write");
        if (!pricing?.hasSource) {
          throw new SparError(
            "not_implemented",
            "this daemon has no pricing source: start it with --pricing-source=<URL or file> (config pricing.source)",
          );
        }
        const admission = limiter.take(caller.identity, Date.now());
        if (!admission.ok) {
          const seconds = admission.retryAfterSeconds;
          return json(429, { error: "rate limited", retry_after_seconds: seconds }, { "retry-after": String(seconds) });
        }
        return json(200, await pricing.refresh());
      },
      {
        response: responses({ 200: RefreshAnswer }, { extra: [404, 429, 501] }),
        detail: { summary: "Re-read the configured pricing source", tags: PRICING },
      },
    );
}
