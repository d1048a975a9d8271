import { expect, test } from "bun:test";
import type { ModelChunk } from "../../../src/core/model.ts";
import { parseScript } from "../../../src/models/script-file.ts";
import { ScriptedModel } from "../../../src/models/scripted-model.ts";
import { EchoModel } from "../../../src/models/echo-model.ts";

async function drain(stream: AsyncIterable<ModelChunk>): Promise<ModelChunk[]> {
  const out: ModelChunk[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

const signal = new AbortController().signal;

test("scripts: comments and blank lines skipped, PascalCase accepted, bad lines named", () => {
  const parsed = parseScript(
    "s.jsonl",
    `# c\n\n{"request":{},"responses":[{"Content":{"role":"model","parts":[{"text":"hi"}]},"TurnComplete":true}]}\n`,
  );
  expect(parsed.ok).toBe(true);
  if (parsed.ok) expect(parsed.value[0]?.responses[0]).toMatchObject({ parts: [{ text: "hi" }], turnComplete: true });
  expect(parseScript("s.jsonl", "# only comments\n")).toEqual({ ok: false, error: "s.jsonl: no turns found" });
  const bad = parseScript("s.jsonl", `{"responses":[]}\n{oops\n`);
  expect(bad.ok).toBe(false);
  if (!bad.ok) expect(bad.error).toStartWith("s.jsonl: line 2:");
});

test("scripted replays text, tool calls and usage with cached and cache-write tokens; past the end it fails", async () => {
  const parsed = parseScript(
    "s",
    `{"responses":[{"content":{"parts":[{"text":"a"},{"functionCall":{"name":"read_file","args":{"path":"x"}}}]},"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":7,"cachedContentTokenCount":60,"cacheWriteTokenCount":30,"thoughtsTokenCount":2},"turnComplete":true}]}`,
  );
  if (!parsed.ok) throw new Error(parsed.error);
  let cursor = 0;
  const model = new ScriptedModel({ turns: parsed.value, strict: false, nextIndex: async () => cursor++ });
  const chunks = await drain(model.stream({ messages: [], tools: [], signal }));
  expect(chunks).toEqual([
    { type: "text-start", id: "text-0" },
    { type: "text-delta", id: "text-0", text: "a" },
    { type: "text-end", id: "text-0" },
    { type: "tool-call", call: { callId: "call-0-1", name: "read_file", args: { path: "x" } } },
    {
      type: "finish",
      finishReason: "stop",
      usage: {
        inputTokens: 100,
        cachedInputTokens: 60,
        cacheWriteInputTokens: 30,
        outputTokens: 7,
        thoughtsTokens: 2,
        toolUseTokens: 0,
        totalTokens: 109,
      },
    },
  ]);
  await expect(drain(model.stream({ messages: [], tools: [], signal }))).rejects.toThrow("script exhausted at turn 1");
});

test("strict mode fails a turn whose contents differ, naming both", async () => {
  const parsed = parseScript(
    "s",
    `{"request":{"contents":[{"role":"user","parts":[{"text":"expected"}]}]},"responses":[{"content":{"parts":[{"text":"ok"}]}}]}\n{"request":{"contents":[{"role":"user","parts":[{"text":"expected"}]}]},"responses":[{"content":{"parts":[{"text":"ok"}]}}]}`,
  );
  if (!parsed.ok) throw new Error(parsed.error);
  let cursor = 0;
  const model = new ScriptedModel({ turns: parsed.value, strict: true, nextIndex: async () => cursor++ });
  expect((await drain(model.stream({ messages: [{ role: "user", text: "expected" }], tools: [], signal })))[1]).toEqual(
    { type: "text-delta", id: "text-0", text: "ok" },
  );
  await expect(drain(model.stream({ messages: [{ role: "user", text: "other" }], tools: [], signal }))).rejects.toThrow(
    "strict mismatch on turn 1",
  );
});

test("echo replies with the last user message and estimates usage", async () => {
  const chunks = await drain(
    new EchoModel().stream({
      messages: [
        { role: "user", text: "first" },
        { role: "assistant", text: "first", toolCalls: [] },
        { role: "user", text: "hello world" },
      ],
      tools: [],
      signal,
    }),
  );
  expect(chunks.slice(0, 3)).toEqual([
    { type: "text-start", id: "text-0" },
    { type: "text-delta", id: "text-0", text: "hello world" },
    { type: "text-end", id: "text-0" },
  ]);
  // input: "first" + "first" + "hello world" = 21 chars -> 6 tokens; output 11 chars -> 3 tokens.
  expect(chunks[3]).toMatchObject({ type: "finish", usage: { inputTokens: 6, outputTokens: 3, totalTokens: 9 } });
  expect((await drain(new EchoModel().stream({ messages: [], tools: [], signal })))[1]).toEqual({
    type: "text-delta",
    id: "text-0",
    text: "(echo: no user input)",
  });
});
