/**
 * W3C trace context as spar stores it with a prompt (D301): the `traceparent` of the request that
 * queued the message, its `tracestate` when there was one, and its `baggage` (D341: the turn's
 * calls that carry baggage, `call_a2a`, carry that request's). Validated on the way in and out of
 * a store, so a malformed value is dropped rather than handed to a propagator. Everywhere else a
 * carrier is the ids alone (`validTraceCarrier`): a thread without an SDK never gets baggage
 * (D323). Pure.
 */
import type { PromptTrace, TraceCarrier } from "./session-store.ts";

/** version 00, 32-hex trace id, 16-hex parent id, 2-hex flags; all-zero ids are invalid. */
const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;
/** tracestate: at most 32 list members; 512 characters is the length propagators must keep. */
const MAX_TRACESTATE = 512;

export function validTraceCarrier(value: unknown): TraceCarrier | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { traceparent, tracestate } = value as Record<string, unknown>;
  if (typeof traceparent !== "string" || !TRACEPARENT.test(traceparent)) return undefined;
  if (typeof tracestate === "string" && tracestate !== "" && tracestate.length <= MAX_TRACESTATE)
    return { traceparent, tracestate };
  return { traceparent };
}

/** The W3C propagator's bound on a whole baggage header (8192 bytes). */
const MAX_BAGGAGE = 8192;
/** A header value: visible ASCII, spaces and tabs (the propagator parses the members). */
const HEADER_VALUE = /^[\t\x20-\x7e]+$/;

/** A prompt's carrier: a valid carrier, with its baggage when that is a bounded header value (D341). */
export function validPromptTrace(value: unknown): PromptTrace | undefined {
  const carrier = validTraceCarrier(value);
  if (carrier === undefined) return undefined;
  const { baggage } = value as Record<string, unknown>;
  return typeof baggage === "string" && baggage.length <= MAX_BAGGAGE && HEADER_VALUE.test(baggage)
    ? { ...carrier, baggage }
    : carrier;
}

/** A model call's span as the turn worker named it (tracing on, D324): its id and when the call started. */
export interface ModelCallSpan {
  spanId: string;
  /** Epoch milliseconds. */
  startedAtMs: number;
}

/**
 * The carrier of a span context spar's SDK holds (its ids already valid): `traceparent` built
 * directly, without a propagator's inject and a re-validation.
 */
export function carrierOfSpan(
  span: { traceId: string; spanId: string; traceFlags: number },
  tracestate?: string,
): TraceCarrier {
  const traceparent = `00-${span.traceId}-${span.spanId}-${span.traceFlags & 1 ? "01" : "00"}`;
  return tracestate ? { traceparent, tracestate } : { traceparent };
}

/** A fresh W3C span id: 8 random bytes as 16 hex digits, never all zero. */
export function newSpanId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  if (bytes.every((byte) => byte === 0)) bytes[7] = 1;
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** Whether `value` is a valid W3C span id (16 lowercase hex digits, not all zero). */
export function isSpanId(value: unknown): value is string {
  return typeof value === "string" && /^(?!0{16})[0-9a-f]{16}$/.test(value);
}

/**
 * The carrier of a child of `parent`'s span whose id is `spanId`: same trace, flags and
 * tracestate, the child's id in the parent field (D324: the turn worker names its model call's
 * span without asking the main thread).
 */
export function childCarrier(parent: TraceCarrier, spanId: string): TraceCarrier {
  const traceparent = `${parent.traceparent.slice(0, 36)}${spanId}${parent.traceparent.slice(52)}`;
  return parent.tracestate === undefined ? { traceparent } : { traceparent, tracestate: parent.tracestate };
}

/** The inbox column text of a prompt's carrier (null: none). */
export function encodeTraceCarrier(carrier: PromptTrace | undefined): string | null {
  const valid = validPromptTrace(carrier);
  return valid === undefined ? null : JSON.stringify(valid);
}

/** An inbox column's carrier; undefined for none or anything malformed. */
export function decodeTraceCarrier(text: string | null | undefined): PromptTrace | undefined {
  if (text === null || text === undefined || text === "") return undefined;
  try {
    return validPromptTrace(JSON.parse(text));
  } catch {
    return undefined;
  }
}
