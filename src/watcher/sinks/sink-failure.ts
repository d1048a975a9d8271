/**
 * A sink call's failure described for the delivery queue: an HTTP answer carries its status, up to
 * 4096 bytes of its body, whether retrying can help and the receiver's Retry-After; a network error
 * or a timeout is always worth retrying.
 */
import { isPermanentStatus, parseRetryAfter } from "../core/delivery-policy.ts";
import type { SinkFailure } from "../core/sink.ts";

const BODY_LOG_LIMIT = 4096;

export async function httpFailure(operation: string, response: Response): Promise<SinkFailure> {
  const body = (await response.text().catch(() => "")).slice(0, BODY_LOG_LIMIT);
  const retryAfterMs = parseRetryAfter(response.headers.get("retry-after"), Date.now());
  return {
    error: `${operation}: HTTP ${response.status}${body ? `: ${body}` : ""}`,
    ...(isPermanentStatus(response.status) ? { permanent: true } : {}),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  };
}

export function networkFailure(operation: string, error: unknown): SinkFailure {
  return { error: `${operation}: ${error instanceof Error ? error.message : String(error)}` };
}
