import { expect, test } from "bun:test";
import { RateLimiter } from "../../../src/surfaces/http/rate-limiter.ts";

test("a bucket allows its burst at once, then one request per 1/rate seconds, and says how long to wait", () => {
  let now = 0;
  const limiter = new RateLimiter({ perSecond: 2, burst: 3 }, () => now);
  expect([1, 2, 3].map(() => limiter.take("alice|triage").allowed)).toEqual([true, true, true]);
  expect(limiter.take("alice|triage")).toEqual({ allowed: false, retryAfterSeconds: 1 });
  expect(limiter.take("bob|triage").allowed).toBe(true);
  now = 499;
  expect(limiter.take("alice|triage").allowed).toBe(false);
  now = 1000;
  // Two tokens came back in the second (2/s): two more requests, not three.
  expect([1, 2, 3].map(() => limiter.take("alice|triage").allowed)).toEqual([true, true, false]);
});

test("a slow rate advises a longer Retry-After; idle full buckets are forgotten", () => {
  let now = 0;
  const limiter = new RateLimiter({ perSecond: 0.1, burst: 1 }, () => now);
  expect(limiter.take("k").allowed).toBe(true);
  expect(limiter.take("k")).toEqual({ allowed: false, retryAfterSeconds: 10 });
  for (let index = 0; index < 1500; index++) limiter.take(`caller-${index}`);
  now = 60_000;
  limiter.take("late");
  expect(limiter.size).toBeLessThan(10);
});
