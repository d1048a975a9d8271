/**
 * A per-caller call limiter for routes whose every call costs real work (a model call): token
 * buckets (rate-limiter.ts) keyed by the verified caller identity (an anonymous listener's one
 * fixed caller is one key; a proxy-asserted request counts for the asserted caller). A refused
 * call is the 429 `{"error":"rate limited","retry_after_seconds":N}` with `Retry-After`
 * (responses.ts). The attach listener's `/slash/*` routes take one per listener (D356: 10 per
 * minute, burst 5), so `spar agent` and svc's attach surface both have it; a route admits
 * after its session is authorized, so a caller refused (or masked 404) spends nothing.
 */
import { SparError } from "../../core/errors.ts";
import type { Caller } from "./caller-auth.ts";
import { type RateLimit, RateLimiter } from "./rate-limiter.ts";

/** The `/slash/*` limit (docs/attach-api.md#slash-operations): 10 calls per minute, bursts of 5. */
export const SLASH_LIMIT: RateLimit = { perSecond: 10 / 60, burst: 5 };

export class CallerRateGuard {
  readonly #buckets: RateLimiter;

  constructor(limit: RateLimit, now?: () => number) {
    this.#buckets = new RateLimiter(limit, now);
  }

  /** Count one call for `caller`; throws the 429 when its bucket is empty. */
  admit(caller: Pick<Caller, "identity">): void {
    const decision = this.#buckets.take(caller.identity);
    if (!decision.allowed)
      throw new SparError("too_many_requests", "rate limited", { retry_after_seconds: decision.retryAfterSeconds });
  }
}
