/**
 * Token buckets per key (svc's protocol listeners: per caller and workload; docs/svc.md#limits,
 * `SVC_A2A_RATE` / `_BURST`, `SVC_AGUI_RATE` / `_BURST`). A bucket holds up to `burst` tokens and
 * refills at `perSecond`; a request takes one, or is refused with the seconds until one is back
 * (the advisory `Retry-After`). Full buckets are forgotten, so idle callers cost nothing. Pure but
 * for the clock it is given.
 */

export interface RateLimit {
  perSecond: number;
  burst: number;
}

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

interface Bucket {
  tokens: number;
  /** ms of the last refill. */
  at: number;
}

export class RateLimiter {
  readonly #limit: RateLimit;
  readonly #now: () => number;
  readonly #buckets = new Map<string, Bucket>();

  constructor(limit: RateLimit, now: () => number = () => performance.now()) {
    this.#limit = limit;
    this.#now = now;
  }

  /** Take one token from `key`'s bucket. */
  take(key: string): RateDecision {
    const now = this.#now();
    this.#forgetFull(now);
    const bucket = this.#buckets.get(key) ?? { tokens: this.#limit.burst, at: now };
    bucket.tokens = Math.min(this.#limit.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.#limit.perSecond);
    bucket.at = now;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      this.#buckets.set(key, bucket);
      return { allowed: true };
    }
    this.#buckets.set(key, bucket);
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / this.#limit.perSecond)) };
  }

  /** Buckets tracked now (tests: idle callers are forgotten). */
  get size(): number {
    return this.#buckets.size;
  }

  #forgetFull(now: number): void {
    if (this.#buckets.size < 1024) return;
    for (const [key, bucket] of this.#buckets) {
      const tokens = bucket.tokens + ((now - bucket.at) / 1000) * this.#limit.perSecond;
      if (tokens >= this.#limit.burst) this.#buckets.delete(key);
    }
  }
}
