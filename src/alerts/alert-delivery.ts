/**
 * Delivering one alert (D462): `POST` of its JSON body to the target's URL through the outbound
 * guard (the operator's `outbound.allow` plus the target's own host), each attempt bounded by its
 * own timeout, redirects not followed (a 3xx is a failure: a webhook that moved is misconfigured,
 * and a POST is not re-sent somewhere else). A network error, a timeout, 408, 425, 429 and any 5xx
 * are retried with doubling backoff (a `Retry-After` up to the cap is honoured) until the attempts
 * run out; any other answer ends it. Every attempt carries the same `Idempotency-Key`, so a
 * receiver that saw an attempt whose answer was lost can drop the repeat. The URL never appears in
 * what this returns.
 */
import type { OutboundGuard } from "../net/outbound-guard.ts";

export interface DeliveryPolicy {
  /** Attempts in all, the first included. */
  attempts: number;
  /** The wait before the second attempt; doubled before each later one. */
  backoffMs: number;
  /** No wait (backoff or Retry-After) is longer than this. */
  maxBackoffMs: number;
  /** One attempt's deadline. */
  attemptTimeoutMs: number;
}

export const DEFAULT_DELIVERY_POLICY: DeliveryPolicy = {
  attempts: 4,
  backoffMs: 500,
  maxBackoffMs: 5000,
  attemptTimeoutMs: 10_000,
};

export interface DeliveryRequest {
  url: string;
  body: Record<string, unknown>;
  /** Sent on every attempt. */
  idempotencyKey: string;
  /** The turn's cancel: stops the attempts and the waits between them. */
  signal: AbortSignal;
}

export type DeliveryOutcome =
  | { delivered: true; statusCode: number; attempts: number; durationMs: number }
  | { delivered: false; error: string; attempts: number; durationMs: number; statusCode?: number };

type Attempt =
  | { ok: true; status: number }
  | { ok: false; retry: boolean; error: string; status?: number; waitMs?: number };

const RETRIED_STATUSES = new Set([408, 425, 429]);
const ERROR_BODY_BYTES = 1024;

/** `Retry-After` in seconds (a date is ignored) as ms, when present. */
function retryAfterMs(response: Response): number | undefined {
  const value = response.headers.get("retry-after");
  if (value === null || !/^\d+$/.test(value.trim())) return undefined;
  return Number(value.trim()) * 1000;
}

/** The first KiB of an error answer, for the operator's log and the model. */
async function errorHead(response: Response): Promise<string> {
  const text = await response.text().catch(() => "");
  const head = Buffer.from(text, "utf8")
    .subarray(0, ERROR_BODY_BYTES)
    .toString("utf8")
    .replace(/\uFFFD$/, "");
  return head.trim() === "" ? "" : `: ${head.trim()}`;
}

async function attemptOnce(guard: OutboundGuard, request: DeliveryRequest, policy: DeliveryPolicy): Promise<Attempt> {
  const signal = AbortSignal.any([request.signal, AbortSignal.timeout(policy.attemptTimeoutMs)]);
  try {
    const answer = await guard.fetch(request.url, {
      method: "POST",
      signal,
      redirect: "manual",
      headers: {
        "content-type": "application/json",
        "idempotency-key": request.idempotencyKey,
        "user-agent": "spar-alert",
      },
      body: JSON.stringify(request.body),
    });
    if (!answer.ok) return { ok: false, retry: answer.reason === "unresolved", error: answer.message };
    const response = answer.response;
    if (response.status >= 200 && response.status < 300) {
      await response.arrayBuffer().catch(() => undefined);
      return { ok: true, status: response.status };
    }
    const retry = response.status >= 500 || RETRIED_STATUSES.has(response.status);
    const wait = retryAfterMs(response);
    const error = `HTTP ${response.status}${await errorHead(response)}`;
    return { ok: false, retry, error, status: response.status, ...(wait === undefined ? {} : { waitMs: wait }) };
  } catch (error) {
    if (request.signal.aborted) throw error;
    const timedOut = signal.aborted;
    const reason = timedOut
      ? `no answer within ${policy.attemptTimeoutMs / 1000} s`
      : error instanceof Error
        ? error.message
        : String(error);
    return { ok: false, retry: true, error: reason };
  }
}

/** Wait `ms`, or reject when the signal fires first. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Every occurrence of the URL replaced, so neither a log nor the model sees it. */
function withoutUrl(text: string, url: string): string {
  return text.split(url).join("<target url>");
}

/** Deliver with bounded retries; rejects only when `request.signal` aborts. */
export async function deliverAlert(
  guard: OutboundGuard,
  request: DeliveryRequest,
  policy: DeliveryPolicy = DEFAULT_DELIVERY_POLICY,
): Promise<DeliveryOutcome> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let backoff = policy.backoffMs;
  for (let attempt = 1; ; attempt++) {
    const result = await attemptOnce(guard, request, policy);
    if (result.ok) return { delivered: true, statusCode: result.status, attempts: attempt, durationMs: elapsed() };
    if (!result.retry || attempt >= policy.attempts)
      return {
        delivered: false,
        error: withoutUrl(result.error, request.url),
        attempts: attempt,
        durationMs: elapsed(),
        ...(result.status === undefined ? {} : { statusCode: result.status }),
      };
    await pause(Math.min(policy.maxBackoffMs, Math.max(backoff, result.waitMs ?? 0)), request.signal);
    backoff *= 2;
  }
}
