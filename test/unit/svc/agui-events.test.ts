/**
 * The AG-UI encoder (src/svc/agui/agui-events.ts): each domain row becomes the events the protocol's
 * own schemas accept (`@ag-ui/core/schemas`), in the order the client requires, and rows with
 * nothing for the client become none.
 */
import { expect, test } from "bun:test";
import { EventSchema } from "@ag-ui/core/schemas";
import type { MessageBoundary, ModelResponseEvent, Publication, SessionEvent } from "../../../src/core/events.ts";
import { ZERO_USAGE } from "../../../src/core/usage.ts";
import { AguiMessageEncoder, rowEvents, sseFrame } from "../../../src/svc/agui/agui-events.ts";
import { RunAgentInputSchema, lastUserText, runSessionId } from "../../../src/svc/agui/run-input.ts";
import * as v from "valibot";

const header = { id: "row-1", ts: "2026-11-26T10:00:00Z", invocationId: "e-1", author: "coordinator" };
const response = (text: string, calls: ModelResponseEvent["toolCalls"]): SessionEvent => ({
  ...header,
  kind: "model-response",
  model: "scripted",
  text,
  toolCalls: calls,
  turnComplete: true,
  finishReason: "stop",
  usage: ZERO_USAGE,
  cost: { costUsd: 0, costUsdUncachedReference: 0 },
});

test("a model response with text and a tool call is a text triple then a tool-call triple parented on it", () => {
  const events = rowEvents(response("checking", [{ callId: "c1", name: "worker", args: { request: "x" } }]));
  expect(events.map((event) => event.type)).toEqual([
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_END",
    "TOOL_CALL_START",
    "TOOL_CALL_ARGS",
    "TOOL_CALL_END",
  ]);
  expect(events[3]).toMatchObject({ toolCallId: "c1", toolCallName: "worker", parentMessageId: "row-1" });
  expect(events[4]).toMatchObject({ delta: '{"request":"x"}' });
  for (const event of events) expect(EventSchema.safeParse(event).success).toBe(true);
});

test("a response with no text makes no empty text message; a tool result is TOOL_CALL_RESULT", () => {
  expect(rowEvents(response("", []))).toEqual([]);
  const result = rowEvents({
    ...header,
    kind: "tool-result",
    callId: "c1",
    name: "worker",
    output: { status: "ok" },
    isError: false,
    latencyMs: 1,
  });
  expect(result).toEqual([
    { type: "TOOL_CALL_RESULT", messageId: "row-1", toolCallId: "c1", content: '{"status":"ok"}', role: "tool" },
  ]);
  expect(EventSchema.safeParse(result[0]).success).toBe(true);
  expect(rowEvents({ ...header, kind: "user-message", text: "hi", promptIds: [] })).toEqual([]);
  expect(rowEvents({ ...header, kind: "audit", name: "gate-audit", metadata: {} })).toEqual([]);
});

test("terminal frames pass the protocol's schema, an interrupt with its required reason", () => {
  const frames = [
    { type: "RUN_FINISHED", threadId: "t", runId: "r", outcome: { type: "success" } },
    {
      type: "RUN_FINISHED",
      threadId: "t",
      runId: "r",
      outcome: {
        type: "interrupt",
        interrupts: [{ id: "gate-1", reason: "tool_approval", message: "?", responseSchema: {} }],
      },
    },
    { type: "RUN_ERROR", message: "gone", code: "aborted" },
  ] as const;
  for (const frame of frames) expect(EventSchema.safeParse(frame).success).toBe(true);
  expect(sseFrame(frames[2])).toBe('data: {"type":"RUN_ERROR","message":"gone","code":"aborted"}\n\n');
});

test("session ids: agui-<threadId> per thread, agui-<runId> per run, a per_run resume continues its parent", () => {
  const input = v.parse(RunAgentInputSchema, {
    threadId: "t1",
    runId: "r2",
    parentRunId: "r1",
    messages: [
      { id: "a", role: "user", content: "first" },
      { id: "b", role: "assistant", content: "ok" },
      { id: "c", role: "user", content: [{ type: "text", text: "second" }] },
    ],
  });
  expect(runSessionId(input, "per_thread")).toBe("agui-t1");
  expect(runSessionId(input, "per_run")).toBe("agui-r2");
  expect(runSessionId({ ...input, resume: [{ interruptId: "i", status: "cancelled" }] }, "per_run")).toBe("agui-r1");
  expect(lastUserText(input)).toBe("second");
});

test("a history with an activity message (object content, AG-UI 1.0) is read, not refused", () => {
  const input = v.safeParse(RunAgentInputSchema, {
    threadId: "t1",
    runId: "r1",
    messages: [
      { id: "a", role: "activity", activityType: "plan", content: { steps: ["look", "fix"] } },
      { id: "b", role: "user", content: "go on" },
    ],
  });
  expect(input.success).toBe(true);
  if (input.success) expect(lastUserText(input.output)).toBe("go on");
});

const part = (messageId: string, kind: MessageBoundary): Publication => ({
  type: "frame",
  frame: { type: "message-part", invocationId: "e-1", messageId, part: kind },
});
const delta = (messageId: string, text: string): Publication => ({
  type: "frame",
  frame: { type: "text-delta", invocationId: "e-1", messageId, text },
});
const committed = (event: SessionEvent): Publication => ({ type: "row", row: { seq: 1, event } });

test("streamed parts become the message frames as they come; the row that completes them adds nothing", () => {
  const encoder = new AguiMessageEncoder();
  const events = [
    part("row-1", { kind: "text-start" }),
    delta("row-1", "check"),
    delta("row-1", "ing"),
    part("row-1", { kind: "text-end" }),
    part("row-1", { kind: "tool-call-start", callId: "c1", name: "worker" }),
    part("row-1", { kind: "tool-call-delta", callId: "c1", delta: '{"request":"x"}' }),
    part("row-1", { kind: "tool-call-end", callId: "c1" }),
    committed(response("checking", [{ callId: "c1", name: "worker", args: { request: "x" } }])),
  ].flatMap((publication) => encoder.publication(publication));
  expect(events).toEqual([
    { type: "TEXT_MESSAGE_START", messageId: "row-1", role: "assistant" },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "row-1", delta: "check" },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "row-1", delta: "ing" },
    { type: "TEXT_MESSAGE_END", messageId: "row-1" },
    { type: "TOOL_CALL_START", toolCallId: "c1", toolCallName: "worker", parentMessageId: "row-1" },
    { type: "TOOL_CALL_ARGS", toolCallId: "c1", delta: '{"request":"x"}' },
    { type: "TOOL_CALL_END", toolCallId: "c1" },
  ]);
  // The closing sweep of the log meets the same row again: still nothing.
  expect(encoder.row(response("checking", []))).toEqual([]);
  expect(encoder.close()).toEqual([]);
});

test("a row whose message did not stream is encoded whole; a cut stream is closed before the terminal frame", () => {
  const encoder = new AguiMessageEncoder();
  expect(encoder.publication(committed(response("late", []))).map((event) => event.type)).toEqual([
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_END",
  ]);
  // Text of a message whose start was not seen is left to its row.
  expect(encoder.publication(delta("m-1", "joined late"))).toEqual([]);
  encoder.publication(part("m-2", { kind: "text-start" }));
  encoder.publication(delta("m-2", "half"));
  encoder.publication(part("m-2", { kind: "tool-call-start", callId: "c9", name: "grep" }));
  expect(encoder.close()).toEqual([
    { type: "TEXT_MESSAGE_END", messageId: "m-2" },
    { type: "TOOL_CALL_END", toolCallId: "c9" },
  ]);
  // Frames a run never asked for (status, usage) carry nothing to the client.
  expect(encoder.publication({ type: "frame", frame: { type: "status-update", turnState: "idle" } })).toEqual([]);
});
