import { expect, test } from "bun:test";
import { SparError, type SparErrorCode } from "../../../../src/core/errors.ts";
import { jsonRpcError, jsonRpcMapping, retryAfterOf } from "../../../../src/surfaces/http/json-rpc-errors.ts";
import { statusForCode } from "../../../../src/surfaces/http/responses.ts";

const CODES: SparErrorCode[] = [
  "bad_request",
  "unauthorized",
  "forbidden",
  "not_found",
  "method_not_allowed",
  "conflict",
  "gone",
  "precondition_failed",
  "payload_too_large",
  "unsupported_media_type",
  "misdirected",
  "headers_too_large",
  "too_many_requests",
  "persistence_failed",
  "not_implemented",
  "bad_gateway",
  "deadline_exceeded",
  "shutting_down",
  "unavailable",
  "internal",
];

test("every SparError code has an HTTP status and a JSON-RPC code in the server-error or standard range", () => {
  for (const code of CODES) {
    expect(statusForCode(code)).toBeGreaterThanOrEqual(400);
    const mapping = jsonRpcMapping(code);
    expect(mapping.code).toBeLessThanOrEqual(-32000);
    expect(mapping.code).toBeGreaterThanOrEqual(-32768);
  }
});

test("the spec's A2A codes: not found -32001, invalid params -32602, unsupported -32004, draining and rate limited retryable -32000", () => {
  expect(jsonRpcError(new SparError("not_found", "no task"))).toEqual({ code: -32001, message: "no task" });
  expect(jsonRpcError(new SparError("bad_request", "no text")).code).toBe(-32602);
  expect(jsonRpcError(new SparError("not_implemented", "several skills")).code).toBe(-32004);
  expect(jsonRpcError(new SparError("shutting_down", "draining"))).toEqual({
    code: -32000,
    message: "draining",
    data: { retryable: true },
  });
  const limited = new SparError("too_many_requests", "slow", { retry_after_seconds: 3 });
  expect(jsonRpcError(limited)).toEqual({
    code: -32000,
    message: "slow",
    data: { retry_after_seconds: 3, retryable: true },
  });
  expect(retryAfterOf(limited)).toBe(3);
  expect(retryAfterOf(new SparError("shutting_down", "x"))).toBe(5);
  expect(jsonRpcError(new Error("boom"))).toEqual({ code: -32603, message: "internal error: boom" });
});
