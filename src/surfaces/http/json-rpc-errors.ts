/**
 * The JSON-RPC 2.0 wire of SparError codes (D11's HTTP table in responses.ts is its sibling): one
 * exhaustive table, so a new SparErrorCode fails to compile until every transport maps it. Codes
 * are JSON-RPC's own (-32600 invalid request, -32601 method not found, -32602 invalid params,
 * -32603 internal) and A2A v0.3's (-32001 task not found, -32004 unsupported operation, -32005
 * content type not supported); -32000 is the implementation-defined server error, `retryable`
 * (its `data` says so) when the same request may succeed later (draining, rate limited, a
 * dependency refused).
 */
import { type SparErrorCode, SparError } from "../../core/errors.ts";

export interface JsonRpcMapping {
  code: number;
  retryable: boolean;
}

const JSON_RPC_BY_CODE: Record<SparErrorCode, JsonRpcMapping> = {
  bad_request: { code: -32602, retryable: false },
  unauthorized: { code: -32000, retryable: false },
  forbidden: { code: -32000, retryable: false },
  not_found: { code: -32001, retryable: false },
  method_not_allowed: { code: -32601, retryable: false },
  conflict: { code: -32000, retryable: false },
  gone: { code: -32001, retryable: false },
  precondition_failed: { code: -32004, retryable: false },
  request_timeout: { code: -32600, retryable: false },
  payload_too_large: { code: -32600, retryable: false },
  unsupported_media_type: { code: -32005, retryable: false },
  misdirected: { code: -32600, retryable: false },
  headers_too_large: { code: -32600, retryable: false },
  too_many_requests: { code: -32000, retryable: true },
  persistence_failed: { code: -32603, retryable: false },
  not_implemented: { code: -32004, retryable: false },
  bad_gateway: { code: -32603, retryable: false },
  model_failed: { code: -32603, retryable: false },
  deadline_exceeded: { code: -32603, retryable: false },
  shutting_down: { code: -32000, retryable: true },
  unavailable: { code: -32000, retryable: true },
  internal: { code: -32603, retryable: false },
};

export function jsonRpcMapping(code: SparErrorCode): JsonRpcMapping {
  return JSON_RPC_BY_CODE[code];
}

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: Record<string, unknown>;
}

/** The `error` member for a failure: a SparError by its code (details kept in `data`), anything else -32603. */
export function jsonRpcError(error: unknown): JsonRpcErrorObject {
  if (!(error instanceof SparError)) {
    const message = error instanceof Error ? error.message : String(error);
    return { code: -32603, message: `internal error: ${message}` };
  }
  const mapping = JSON_RPC_BY_CODE[error.code];
  const data = { ...error.details, ...(mapping.retryable ? { retryable: true } : {}) };
  return { code: mapping.code, message: error.message, ...(Object.keys(data).length > 0 ? { data } : {}) };
}

/** Seconds of the advisory `Retry-After` an error's answer carries, if any. */
export function retryAfterOf(error: unknown): number | undefined {
  if (!(error instanceof SparError)) return undefined;
  if (error.code === "shutting_down") return 5;
  const seconds = error.details.retry_after_seconds;
  return error.code === "too_many_requests" && typeof seconds === "number" ? seconds : undefined;
}
