/**
 * When a failed delivery is tried again (issue 13 item 11): exponential backoff from 1 s doubling
 * to 60 s, or the receiver's Retry-After (at least the backoff floor, at most 5 minutes) when it
 * sent one; a payload still undelivered an hour after it was first queued is given up; at most
 * 1,000 payloads wait (the oldest is given up first). Which failures are worth retrying: network
 * errors, timeouts, 408, 425, 429 and every 5xx; any other 4xx is permanent. Pure.
 */

export interface DeliveryPolicy {
  backoffMinMs: number;
  backoffMaxMs: number;
  retryAfterMaxMs: number;
  giveUpAfterMs: number;
  maxPending: number;
}

export const DEFAULT_DELIVERY_POLICY: DeliveryPolicy = {
  backoffMinMs: 1000,
  backoffMaxMs: 60_000,
  retryAfterMaxMs: 5 * 60_000,
  giveUpAfterMs: 60 * 60_000,
  maxPending: 1000,
};

/** Exponential backoff after `attempts` failed attempts (1 or more): `minMs` doubling to `maxMs`. */
export function backoffMs(attempts: number, minMs: number, maxMs: number): number {
  return Math.min(maxMs, minMs * 2 ** Math.max(0, Math.min(attempts - 1, 30)));
}

/** The wait before the next attempt, after `attempts` failed ones (1 or more). */
export function retryDelayMs(attempts: number, retryAfterMs: number | undefined, policy: DeliveryPolicy): number {
  if (retryAfterMs !== undefined) return Math.min(policy.retryAfterMaxMs, Math.max(policy.backoffMinMs, retryAfterMs));
  return backoffMs(attempts, policy.backoffMinMs, policy.backoffMaxMs);
}

/** A Retry-After header (delay-seconds or an HTTP date) as milliseconds from `now`; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, now: number): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  if (/^\d{1,9}$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}

/** A status that retrying cannot change: a 4xx other than 408 (timeout), 425 (too early) and 429 (too many requests). */
export function isPermanentStatus(status: number): boolean {
  return status >= 400 && status < 500 && status !== 408 && status !== 425 && status !== 429;
}
