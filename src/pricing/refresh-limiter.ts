/**
 * A per-caller token bucket: the cost limiter on `POST /pricing/refresh` (docs/security.md#resource-caps:
 * the same numbers as the `/slash/*` limiter, 10 per minute, burst 5). Clock passed in; no I/O.
 */

export interface LimiterSettings {
  /** Tokens added per minute. */
  perMinute: number;
  /** Bucket size: calls allowed back to back. */
  burst: number;
}

export const REFRESH_LIMIT: LimiterSettings = { perMinute: 10, burst: 5 };

export type Admission = { ok: true } | { ok: false; retryAfterSeconds: number };

/** Buckets idle this long are full again and can be forgotten. */
const FORGET_AFTER_MS = 10 * 60_000;

export class CallerLimiter {
  readonly #settings: LimiterSettings;
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(settings: LimiterSettings = REFRESH_LIMIT) {
    this.#settings = settings;
  }

  /** Take one token for `caller` at `nowMs`, or say how many whole seconds until one is free. */
  take(caller: string, nowMs: number): Admission {
    const perMs = this.#settings.perMinute / 60_000;
    const bucket = this.#buckets.get(caller) ?? { tokens: this.#settings.burst, at: nowMs };
    const tokens = Math.min(this.#settings.burst, bucket.tokens + Math.max(0, nowMs - bucket.at) * perMs);
    if (tokens < 1) {
      this.#buckets.set(caller, { tokens, at: nowMs });
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / perMs / 1000)) };
    }
    this.#buckets.set(caller, { tokens: tokens - 1, at: nowMs });
    if (this.#buckets.size > 1000) this.#forgetIdle(nowMs);
    return { ok: true };
  }

  #forgetIdle(nowMs: number): void {
    for (const [caller, bucket] of this.#buckets) if (nowMs - bucket.at > FORGET_AFTER_MS) this.#buckets.delete(caller);
  }
}
