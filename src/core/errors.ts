/**
 * SparError: every failure the domain reports carries a string code. Surfaces map codes to their
 * wire (HTTP status and JSON body, JSON-RPC code); the core never knows about transports.
 */
export type SparErrorCode =
  | "bad_request" // malformed or invalid input (400)
  | "unauthorized" // no or wrong credentials (401)
  | "forbidden" // authenticated but not allowed (403)
  | "not_found" // unknown resource, or denied and masked (404)
  | "method_not_allowed" // known path, wrong method (405)
  | "conflict" // exists already, ambiguous, incompatible (409)
  | "gone" // was here, is gone (410)
  | "precondition_failed" // a required capability of the resource is missing (412)
  | "request_timeout" // the client did not send its request whole in time (408)
  | "payload_too_large" // body over the limit (413)
  | "unsupported_media_type" // write without application/json (415)
  | "misdirected" // a Host this listener does not serve (421)
  | "headers_too_large" // the header section is over the limit (431)
  | "too_many_requests" // a cap or limiter refused; details carry retry_after_seconds (429)
  | "persistence_failed" // a write that must land did not (500)
  | "not_implemented" // capability missing (501)
  | "bad_gateway" // an upstream (the model) answered with something unusable (502)
  | "model_failed" // a model call the request made itself failed (500, as the attach API's slash errors, D373)
  | "deadline_exceeded" // the work ran past its wallclock budget and was cancelled (504)
  | "shutting_down" // daemon is draining (503, Retry-After)
  | "unavailable" // a dependency (the store) refused (503)
  | "internal"; // a bug; never used for bad input

export class SparError extends Error {
  readonly code: SparErrorCode;
  /** Extra keys some wire bodies carry (e.g. retry_after_seconds). */
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: SparErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = "SparError";
    this.code = code;
    this.details = details;
  }
}

export function isSparError(value: unknown): value is SparError {
  return value instanceof SparError;
}
