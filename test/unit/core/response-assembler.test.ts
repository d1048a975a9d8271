import { expect, test } from "bun:test";
import type { MessagePart } from "../../../src/core/events.ts";
import type { ModelChunk } from "../../../src/core/model.ts";
import { ResponseAssembler } from "../../../src/core/response-assembler.ts";
import { ZERO_USAGE } from "../../../src/core/usage.ts";

function assemble(chunks: ModelChunk[], close = false): { parts: MessagePart[]; assembler: ResponseAssembler } {
  const assembler = new ResponseAssembler();
  const parts = chunks.flatMap((chunk) => assembler.accept(chunk));
  if (close) parts.push(...assembler.close());
  return { parts, assembler };
}

const FINISH: ModelChunk = { type: "finish", finishReason: "tool-calls", usage: ZERO_USAGE };
const CALL = { callId: "c1", name: "read_file", args: { path: "a" } };

test("text inside the model's text part is one message text, closed by the model's end", () => {
  const { parts, assembler } = assemble([
    { type: "text-start", id: "0" },
    { type: "text-delta", id: "0", text: "Hel" },
    { type: "text-delta", id: "0", text: "" },
    { type: "text-delta", id: "0", text: "lo" },
    { type: "text-end", id: "0" },
    { type: "finish", finishReason: "stop", usage: ZERO_USAGE },
  ]);
  expect(parts).toEqual([
    { kind: "text-start" },
    { kind: "text-delta", text: "Hel" },
    { kind: "text-delta", text: "lo" },
    { kind: "text-end" },
  ]);
  expect(assembler.response()).toEqual({
    text: "Hello",
    toolCalls: [],
    finish: { finishReason: "stop", usage: ZERO_USAGE },
  });
});

test("a streamed tool input keeps its own argument text; the complete call adds nothing but the call", () => {
  const { parts, assembler } = assemble([
    { type: "text-delta", id: "0", text: "Reading." },
    { type: "tool-input-start", callId: "c1", name: "read_file" },
    { type: "tool-input-delta", callId: "c1", delta: '{"path":' },
    { type: "tool-input-delta", callId: "c1", delta: '"a"}' },
    { type: "tool-input-end", callId: "c1" },
    { type: "tool-call", call: CALL },
    FINISH,
  ]);
  // Text without a start opens the message; a tool call closes the text first.
  expect(parts).toEqual([
    { kind: "text-start" },
    { kind: "text-delta", text: "Reading." },
    { kind: "text-end" },
    { kind: "tool-call-start", callId: "c1", name: "read_file" },
    { kind: "tool-call-delta", callId: "c1", delta: '{"path":' },
    { kind: "tool-call-delta", callId: "c1", delta: '"a"}' },
    { kind: "tool-call-end", callId: "c1" },
  ]);
  expect(assembler.response().toolCalls).toEqual([CALL]);
});

test("a call whose input never streamed gets its start, its arguments as JSON and its end", () => {
  const { parts } = assemble([{ type: "tool-call", call: CALL }, FINISH]);
  expect(parts).toEqual([
    { kind: "tool-call-start", callId: "c1", name: "read_file" },
    { kind: "tool-call-delta", callId: "c1", delta: '{"path":"a"}' },
    { kind: "tool-call-end", callId: "c1" },
  ]);
});

test("a stream cut mid-part is closed by close(), once; input of an unopened call is dropped", () => {
  const assembler = new ResponseAssembler();
  const parts = [
    { type: "text-start", id: "0" },
    { type: "text-delta", id: "0", text: "half" },
    { type: "tool-input-delta", callId: "ghost", delta: "{" },
    { type: "tool-input-start", callId: "c2", name: "grep" },
  ].flatMap((chunk) => assembler.accept(chunk as ModelChunk));
  expect(parts).toEqual([
    { kind: "text-start" },
    { kind: "text-delta", text: "half" },
    { kind: "text-end" },
    { kind: "tool-call-start", callId: "c2", name: "grep" },
  ]);
  expect(assembler.close()).toEqual([{ kind: "tool-call-end", callId: "c2" }]);
  expect(assembler.close()).toEqual([]);
  // The call never completed: the response proposes nothing.
  expect(assembler.response()).toEqual({ text: "half", toolCalls: [], finish: undefined });
});

test("the finish closes an open text part; a second text part after a close reopens the text", () => {
  const { parts } = assemble([
    { type: "text-start", id: "a" },
    { type: "text-delta", id: "a", text: "x" },
    { type: "text-end", id: "a" },
    { type: "text-start", id: "b" },
    { type: "text-delta", id: "b", text: "y" },
    { type: "finish", finishReason: "stop", usage: ZERO_USAGE },
  ]);
  expect(parts.map((part) => part.kind)).toEqual([
    "text-start",
    "text-delta",
    "text-end",
    "text-start",
    "text-delta",
    "text-end",
  ]);
});
