/**
 * JSON responses and the mapping of SparError codes to HTTP statuses (D11: every error body is
 * `{"error": "<message>"}` with application/json, plus the extra keys some errors carry).
 */
import { type SparErrorCode, SparError } from "../../core/errors.ts";
import { HttpProblem } from "./http-problem.ts";

const STATUS_BY_CODE: Record<SparErrorCode, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  gone: 410,
  precondition_failed: 412,
  request_timeout: 408,
  payload_too_large: 413,
  unsupported_media_type: 415,
  misdirected: 421,
  headers_too_large: 431,
  too_many_requests: 429,
  persistence_failed: 500,
  not_implemented: 501,
  bad_gateway: 502,
  model_failed: 500,
  deadline_exceeded: 504,
  shutting_down: 503,
  unavailable: 503,
  internal: 500,
};

export const JSON_HEADERS = { "content-type": "application/json" } as const;

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { ...JSON_HEADERS, ...headers } });
}

export function statusForCode(code: SparErrorCode): number {
  return STATUS_BY_CODE[code];
}

/** The wire form of an error: its status, `{error, ...details}`, and the headers it needs. */
export function errorResponse(error: unknown, extraHeaders: Record<string, string> = {}): Response {
  if (!(error instanceof SparError)) {
    const message = error instanceof Error ? error.message : String(error);
    return json(500, { error: `internal error: ${message}` }, extraHeaders);
  }
  const headers: Record<string, string> = { ...extraHeaders, ...(error instanceof HttpProblem ? error.headers : {}) };
  if (error.code === "shutting_down") headers["retry-after"] = "5";
  const retryAfter = error.details.retry_after_seconds;
  if (error.code === "too_many_requests" && typeof retryAfter === "number") headers["retry-after"] = String(retryAfter);
  return json(statusForCode(error.code), { error: error.message, ...error.details }, headers);
}
