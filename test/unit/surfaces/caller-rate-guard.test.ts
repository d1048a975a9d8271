/**
 * The per-caller limiter of `/slash/*` (D356): 10 a minute in bursts of 5 per caller identity; the
 * refusal is the 429 SparError with `retry_after_seconds`.
 */
import { expect, test } from "bun:test";
import { SparError } from "../../../src/core/errors.ts";
import { CallerRateGuard, SLASH_LIMIT } from "../../../src/surfaces/http/caller-rate-guard.ts";
import { errorResponse } from "../../../src/surfaces/http/responses.ts";

test("five back to back, the sixth refused for 6 s; one more per 6 s; callers are counted apart", async () => {
  let now = 0;
  const guard = new CallerRateGuard(SLASH_LIMIT, () => now);
  for (let call = 0; call < 5; call++) guard.admit({ identity: "alice" });
  let refused: unknown;
  try {
    guard.admit({ identity: "alice" });
  } catch (error) {
    refused = error;
  }
  expect(refused).toBeInstanceOf(SparError);
  const response = errorResponse(refused);
  expect(response.status).toBe(429);
  expect(response.headers.get("retry-after")).toBe("6");
  expect(await response.json()).toEqual({ error: "rate limited", retry_after_seconds: 6 });
  guard.admit({ identity: "bob" });
  now = 6000;
  guard.admit({ identity: "alice" });
  expect(() => guard.admit({ identity: "alice" })).toThrow("rate limited");
});
