/**
 * Trace carriers (src/core/trace-carrier.ts): validation, and the child carrier the turn worker
 * builds for a model call's span (D324): same trace, flags and tracestate, the new span's id.
 */
import { describe, expect, test } from "bun:test";
import {
  carrierOfSpan,
  childCarrier,
  decodeTraceCarrier,
  encodeTraceCarrier,
  isSpanId,
  newSpanId,
  validPromptTrace,
  validTraceCarrier,
} from "../../../src/core/trace-carrier.ts";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = `00-${TRACE}-00f067aa0ba902b7-01`;

describe("validTraceCarrier", () => {
  test("keeps a valid traceparent and its tracestate", () => {
    expect(validTraceCarrier({ traceparent: PARENT, tracestate: "vendor=x" })).toEqual({
      traceparent: PARENT,
      tracestate: "vendor=x",
    });
  });

  test("drops a malformed or all-zero traceparent", () => {
    expect(validTraceCarrier({ traceparent: "00-zz-00f067aa0ba902b7-01" })).toBeUndefined();
    expect(validTraceCarrier({ traceparent: `00-${"0".repeat(32)}-00f067aa0ba902b7-01` })).toBeUndefined();
    expect(validTraceCarrier({ traceparent: `00-${TRACE}-${"0".repeat(16)}-01` })).toBeUndefined();
    expect(decodeTraceCarrier("{not json")).toBeUndefined();
    expect(decodeTraceCarrier(encodeTraceCarrier({ traceparent: PARENT }))).toEqual({ traceparent: PARENT });
  });
});

describe("a prompt's carrier keeps the baggage of the request that queued it (D341)", () => {
  test("stored and read back with the ids; a carrier for anything else never keeps it", () => {
    const stored = encodeTraceCarrier({ traceparent: PARENT, baggage: "tenant=acme,user=alice" });
    expect(decodeTraceCarrier(stored)).toEqual({ traceparent: PARENT, baggage: "tenant=acme,user=alice" });
    expect(validTraceCarrier({ traceparent: PARENT, baggage: "tenant=acme" })).toEqual({ traceparent: PARENT });
  });

  test("baggage that is no bounded header value is dropped, the ids kept", () => {
    for (const baggage of ["a=b\r\nx-evil: 1", "k=é", "k=".padEnd(8193, "v"), "", 7])
      expect(validPromptTrace({ traceparent: PARENT, baggage })).toEqual({ traceparent: PARENT });
    expect(validPromptTrace({ traceparent: "bad", baggage: "k=v" })).toBeUndefined();
    expect(validPromptTrace({ traceparent: PARENT, baggage: "k=".padEnd(8192, "v") })?.baggage).toHaveLength(8192);
  });
});

describe("carrierOfSpan", () => {
  test("writes the traceparent of a sampled and an unsampled span, with a tracestate when there is one", () => {
    const span = { traceId: TRACE, spanId: "1234567890abcdef", traceFlags: 1 };
    expect(carrierOfSpan(span)).toEqual({ traceparent: `00-${TRACE}-1234567890abcdef-01` });
    expect(carrierOfSpan({ ...span, traceFlags: 0 }, "vendor=x")).toEqual({
      traceparent: `00-${TRACE}-1234567890abcdef-00`,
      tracestate: "vendor=x",
    });
    expect(validTraceCarrier(carrierOfSpan(span))).toEqual(carrierOfSpan(span));
  });
});

describe("the model call's child carrier", () => {
  test("a new span id is 16 lowercase hex digits, and two are not the same", () => {
    const ids = new Set(Array.from({ length: 1000 }, () => newSpanId()));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(isSpanId(id)).toBe(true);
  });

  test("isSpanId refuses what the SDK must never be handed", () => {
    expect(isSpanId("0".repeat(16))).toBe(false);
    expect(isSpanId("00F067AA0BA902B7")).toBe(false);
    expect(isSpanId("00f067aa0ba902b")).toBe(false);
    expect(isSpanId(42)).toBe(false);
  });

  test("keeps the trace, the flags and the tracestate; names the child's span", () => {
    const child = childCarrier({ traceparent: PARENT, tracestate: "vendor=x" }, "1234567890abcdef");
    expect(child).toEqual({ traceparent: `00-${TRACE}-1234567890abcdef-01`, tracestate: "vendor=x" });
    expect(validTraceCarrier(child)).toEqual(child);
    expect(child.traceparent.slice(3, 35)).toBe(TRACE);
    expect(child.traceparent.slice(36, 52)).toBe("1234567890abcdef");
    const unsampled = childCarrier({ traceparent: `00-${TRACE}-00f067aa0ba902b7-00` }, "1234567890abcdef");
    expect(unsampled).toEqual({ traceparent: `00-${TRACE}-1234567890abcdef-00` });
  });
});
