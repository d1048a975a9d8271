/**
 * The attach spelling of the domain live frames (wire-frame.ts): every frame kind, as the runtime
 * builds it, encodes to exactly the bytes the attach stream carried before the core's frames
 * became domain types (the golden strings were produced by that encoder), key order included.
 */
import { expect, test } from "bun:test";
import type { LiveFrame } from "../../../src/core/events.ts";
import { CANCELED_TURN } from "../../../src/core/turn-errors.ts";
import { UsageLedger, ZERO_USAGE } from "../../../src/core/usage.ts";
import { ZERO_TIME } from "../../../src/core/zero-time.ts";
import { PublicationEncoder, encodeLiveFrame, encodeWireFrame } from "../../../src/surfaces/attach/sse-frames.ts";
import { LIVE_EVENT_NAMES, openingStatusFrame } from "../../../src/surfaces/attach/wire-frame.ts";

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

const GOLDEN: Array<[LiveFrame, string]> = [
  [
    { type: "inbox", state: "queued", promptId: "p1", queuedAt: "2026-01-02T00:00:00.000Z" },
    'event: inbox\ndata: {"state":"queued","prompt_id":"p1","queued_at":"2026-01-02T00:00:00.000Z"}\n\n',
  ],
  [
    { type: "inbox", state: "dequeued", promptId: "p1", queuedAt: ZERO_TIME },
    'event: inbox\ndata: {"state":"dequeued","prompt_id":"p1","queued_at":"0001-01-01T00:00:00Z"}\n\n',
  ],
  [
    { type: "inbox", state: "dequeued", promptId: "c1", queuedAt: ZERO_TIME, withdrawn: true },
    'event: inbox\ndata: {"state":"dequeued","prompt_id":"c1","queued_at":"0001-01-01T00:00:00Z","withdrawn":true}\n\n',
  ],
  [
    { type: "status-update", turnState: "streaming", model: "echo" },
    'event: status-update\ndata: {"turn_state":"streaming","model":"echo"}\n\n',
  ],
  [{ type: "status-update", turnState: "idle" }, 'event: status-update\ndata: {"turn_state":"idle"}\n\n'],
  [
    { type: "status-update", turnState: "awaiting_permission" },
    'event: status-update\ndata: {"turn_state":"awaiting_permission"}\n\n',
  ],
  [
    {
      type: "turn-complete",
      promptId: "p1",
      model: "echo",
      inputTokens: 12,
      outputTokens: 3,
      costUsd: 0.25,
      latencyMs: 41,
    },
    'event: turn-complete\ndata: {"prompt_id":"p1","model":"echo","tokens_in":12,"tokens_out":3,"cost_usd":0.25,"latency_ms":41}\n\n',
  ],
  [
    { type: "turn-error", ...CANCELED_TURN },
    'event: turn-error\ndata: {"kind":"canceled","code":"CANCELED","message":"turn canceled","retryable":false}\n\n',
  ],
  [
    { type: "turn-error", kind: "rate_limited", message: "slow down", retryable: true, code: "429", hint: "wait" },
    'event: turn-error\ndata: {"kind":"rate_limited","message":"slow down","retryable":true,"code":"429","hint":"wait"}\n\n',
  ],
  [{ type: "wake", at: "2026-01-02T00:00:00.000Z" }, 'event: wake\ndata: {"at":"2026-01-02T00:00:00.000Z"}\n\n'],
  [
    { type: "pause", state: "paused", reason: "operator-interrupt", interrupted: true, at: "t1" },
    'event: pause\ndata: {"state":"paused","reason":"operator-interrupt","interrupted":true,"at":"t1"}\n\n',
  ],
  [
    { type: "pause", state: "paused", reason: "operator-pause", at: "t2" },
    'event: pause\ndata: {"state":"paused","reason":"operator-pause","at":"t2"}\n\n',
  ],
  [
    { type: "pause", state: "resumed", mode: "steer", at: "t3" },
    'event: pause\ndata: {"state":"resumed","mode":"steer","at":"t3"}\n\n',
  ],
  [
    { type: "guardrail-trip", guardrail: "cost_ceiling", reason: "over", haltedTurn: true },
    'event: guardrail-trip\ndata: {"guardrail":"cost_ceiling","reason":"over","halted_turn":true}\n\n',
  ],
  [
    { type: "text-delta", invocationId: "inv-1", messageId: "m-1", text: 'he said "hi"\n' },
    'event: text-delta\ndata: {"invocation_id":"inv-1","text":"he said \\"hi\\"\\n","message_id":"m-1"}\n\n',
  ],
  [
    { type: "message-part", invocationId: "inv-1", messageId: "m-1", part: { kind: "text-start" } },
    'event: message-part\ndata: {"invocation_id":"inv-1","message_id":"m-1","part":"text-start"}\n\n',
  ],
  [
    {
      type: "message-part",
      invocationId: "inv-1",
      messageId: "m-1",
      part: { kind: "tool-call-delta", callId: "c-1", delta: '{"a":' },
    },
    'event: message-part\ndata: {"invocation_id":"inv-1","message_id":"m-1","part":"tool-call-delta","call_id":"c-1","delta":"{\\"a\\":"}\n\n',
  ],
];

test("every live frame kind encodes to the attach bytes it always had, key order included", () => {
  for (const [frame, wire] of GOLDEN) expect(text(encodeLiveFrame(frame))).toBe(wire);
  const kinds = new Set(GOLDEN.map(([frame]) => frame.type));
  // Every kind but usage-update (its own test below) is pinned here.
  expect(kinds.size).toBe(LIVE_EVENT_NAMES.length - 1);
});

test("a usage update encodes its totals, by_model once a model ran and last_turn with cache fields only when set", () => {
  const ledger = new UsageLedger();
  const encoded = () => text(encodeLiveFrame({ type: "usage-update", ...ledger.toUsageUpdate() }));
  expect(encoded()).toBe(
    'event: usage-update\ndata: {"tokens_in_total":0,"tokens_out_total":0,"cost_usd_total":0,"turns_total":0}\n\n',
  );
  ledger.record({
    turn: 1,
    ts: "t",
    model: "a",
    usage: { ...ZERO_USAGE, inputTokens: 100, outputTokens: 10, totalTokens: 110 },
    cost: { costUsd: 0.5, costUsdUncachedReference: 0.5 },
  });
  expect(encoded()).toBe(
    'event: usage-update\ndata: {"tokens_in_total":100,"tokens_out_total":10,"cost_usd_total":0.5,"turns_total":1,"by_model":{"a":{"tokens_in":100,"tokens_out":10,"cost_usd":0.5,"turns":1}},"last_turn":{"tokens_in":100,"tokens_out":10,"cost_usd":0.5,"model":"a"}}\n\n',
  );
  ledger.record({
    turn: 2,
    ts: "t",
    model: "b",
    usage: {
      ...ZERO_USAGE,
      inputTokens: 20,
      cachedInputTokens: 8,
      cacheWriteInputTokens: 4,
      outputTokens: 5,
      totalTokens: 25,
    },
    cost: { costUsd: 0.125, costUsdUncachedReference: 0.2 },
  });
  expect(encoded()).toBe(
    'event: usage-update\ndata: {"tokens_in_total":120,"tokens_out_total":15,"cost_usd_total":0.625,"turns_total":2,"by_model":{"a":{"tokens_in":100,"tokens_out":10,"cost_usd":0.5,"turns":1},"b":{"tokens_in":20,"tokens_out":5,"cost_usd":0.125,"turns":1}},"last_turn":{"tokens_in":20,"tokens_out":5,"cost_usd":0.125,"model":"b","tokens_in_cached":8,"tokens_in_cache_write":4}}\n\n',
  );
});

test("a stream's opening status frame keeps its own key order: the model first", () => {
  expect(text(encodeWireFrame(openingStatusFrame("echo", "idle")))).toBe(
    'event: status-update\ndata: {"model":"echo","turn_state":"idle"}\n\n',
  );
});

test("capabilities advertise the typed frame names in their pinned order", () => {
  expect(LIVE_EVENT_NAMES).toEqual([
    "status-update",
    "usage-update",
    "inbox",
    "turn-complete",
    "turn-error",
    "pause",
    "wake",
    "guardrail-trip",
    "text-delta",
    "message-part",
  ]);
});

test("a publication is encoded once: fan-out to many subscribers shares the same bytes", () => {
  const encoder = new PublicationEncoder();
  const first = { type: "frame" as const, frame: { type: "wake" as const, at: "t" } };
  const second = { type: "frame" as const, frame: { type: "wake" as const, at: "t" } };
  const bytes = encoder.encode(first);
  expect(encoder.encode(first)).toBe(bytes);
  expect(encoder.encode(second)).not.toBe(bytes);
  expect(encoder.encode(first)).toBe(bytes);
  expect(text(bytes)).toBe('event: wake\ndata: {"at":"t"}\n\n');
});
