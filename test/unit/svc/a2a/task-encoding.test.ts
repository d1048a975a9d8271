import { expect, test } from "bun:test";
import type { SessionEvent } from "../../../../src/core/events.ts";
import {
  StatusUpdateEncoder,
  encodeTask,
  modelResponseUpdate,
  transcriptOutcome,
} from "../../../../src/svc/a2a/task-encoding.ts";

const header = (ts: string) => ({ id: crypto.randomUUID(), ts, invocationId: "t", author: "x" });
const prompt = (text: string, ts = "2026-01-01T00:00:00Z"): SessionEvent => ({
  ...header(ts),
  kind: "user-message",
  text,
  promptIds: [],
});
const reply = (text: string, turnComplete: boolean, ts = "2026-01-01T00:00:01Z"): SessionEvent => ({
  ...header(ts),
  kind: "model-response",
  model: "echo",
  text,
  toolCalls: [],
  turnComplete,
  finishReason: "stop",
  usage: {} as never,
  cost: {} as never,
});

test("the answer is the last text after the last prompt, once a model response completed the turn", () => {
  expect(transcriptOutcome([prompt("a"), reply("thinking", false), reply("done", true)])).toEqual({
    answer: "done",
    at: "2026-01-01T00:00:01Z",
  });
  expect(transcriptOutcome([prompt("a"), reply("thinking", false)]).answer).toBeUndefined();
  // A later prompt without its answer yet: the earlier answer is not this prompt's.
  expect(transcriptOutcome([prompt("a"), reply("old", true), prompt("b")]).answer).toBeUndefined();
  expect(transcriptOutcome([]).answer).toBeUndefined();
});

test("a model response with text is a working status update carrying it; one without text is none", () => {
  const task = { id: "a2a-1", contextId: "ctx-1" };
  expect(modelResponseUpdate(task, reply("half way", false))).toMatchObject({
    kind: "status-update",
    final: false,
    status: { state: "working", message: { role: "agent", parts: [{ kind: "text", text: "half way" }] } },
  });
  expect(modelResponseUpdate(task, reply("  ", true))).toBeUndefined();
  expect(modelResponseUpdate(task, prompt("x"))).toBeUndefined();
});

test("only a completed task carries the result artifact", () => {
  const task = { id: "a2a-1", contextId: "ctx-1" };
  const at = "2026-01-01T00:00:00Z";
  expect(encodeTask(task, { state: "completed", answer: "42", at }).artifacts).toEqual([
    { artifactId: "result", name: "result", parts: [{ kind: "text", text: "42" }] },
  ]);
  expect(encodeTask(task, { state: "input-required", note: "q", at }).artifacts).toBeUndefined();
});

test("a streamed message's status update is sent as its text part ends, with its text and id; its row adds none", () => {
  const task = { id: "a2a-1", contextId: "ctx-1" };
  const encoder = new StatusUpdateEncoder(task);
  const frame = (frame: Record<string, unknown>) =>
    encoder.publication({ type: "frame", frame: { invocationId: "t", messageId: "m-1", ...frame } as never });
  expect(frame({ type: "message-part", part: { kind: "text-start" } })).toBeUndefined();
  expect(frame({ type: "text-delta", text: "half " })).toBeUndefined();
  expect(frame({ type: "text-delta", text: "way" })).toBeUndefined();
  expect(frame({ type: "message-part", part: { kind: "text-end" } })).toMatchObject({
    kind: "status-update",
    final: false,
    status: { state: "working", message: { messageId: "m-1", parts: [{ kind: "text", text: "half way" }] } },
  });
  const row = { ...reply("half way", false), id: "m-1" };
  expect(encoder.publication({ type: "row", row: { seq: 2, event: row } })).toBeUndefined();
  // A message joined mid-way sends nothing at its end: its row does, whole.
  const joined = (frame: Record<string, unknown>) =>
    encoder.publication({ type: "frame", frame: { invocationId: "t", messageId: "m-2", ...frame } as never });
  expect(joined({ type: "text-delta", text: "te" })).toBeUndefined();
  expect(joined({ type: "message-part", part: { kind: "text-end" } })).toBeUndefined();
  // A response that did not stream here (the stream joined late) is sent from its row.
  const late = { ...reply("late", true), id: "m-2" };
  expect(encoder.publication({ type: "row", row: { seq: 3, event: late } })).toMatchObject({
    status: { message: { messageId: "m-2", parts: [{ kind: "text", text: "late" }] } },
  });
});
