/**
 * ModelCallSpans (src/runtime/model-call-spans.ts, D324): the turn worker names each model call's
 * span, the provider request carries it, and the name reaches the main thread exactly once: with
 * the committed response, or with the outcome when the call never answered.
 */
import { expect, test } from "bun:test";
import type { ResponseDraft } from "../../../src/runtime/channel.ts";
import { ModelCallSpans } from "../../../src/runtime/model-call-spans.ts";
import { ZERO_USAGE } from "../../../src/core/usage.ts";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const TURN = { traceparent: `00-${TRACE}-00f067aa0ba902b7-01`, tracestate: "vendor=x" };

function draft(): ResponseDraft {
  return { messageId: "m1", text: "hi", toolCalls: [], finishReason: "stop", usage: ZERO_USAGE, turnComplete: true };
}

test("each call's headers name a new child of the turn's span; the response carries that span", () => {
  const spans = new ModelCallSpans(TURN);
  const before = Date.now();
  const first = spans.starting();
  const answered = spans.answered(draft());
  const second = spans.starting();
  expect(first.traceparent).toMatch(new RegExp(`^00-${TRACE}-[0-9a-f]{16}-01$`));
  expect(first.tracestate).toBe("vendor=x");
  expect(second.traceparent).not.toBe(first.traceparent);
  expect(answered.call?.spanId).toBe(first.traceparent?.slice(36, 52));
  expect(answered.call?.startedAtMs).toBeGreaterThanOrEqual(before - 1);
  expect(answered.call?.startedAtMs).toBeLessThanOrEqual(Date.now() + 1);
});

test("a call that never answered goes with a failed or cancelled outcome, once", () => {
  const spans = new ModelCallSpans(TURN);
  const headers = spans.starting();
  const outcome = spans.ended({ status: "failed", message: "provider refused" });
  expect(outcome.status === "failed" && outcome.modelCall?.spanId).toBe(headers.traceparent?.slice(36, 52));
  expect(spans.ended({ status: "canceled" })).toEqual({ status: "canceled" });
});

test("an answered call is not reported again with the outcome", () => {
  const spans = new ModelCallSpans(TURN);
  spans.starting();
  spans.answered(draft());
  expect(spans.ended({ status: "canceled" })).toEqual({ status: "canceled" });
  expect(spans.answered(draft()).call).toBeUndefined();
});
