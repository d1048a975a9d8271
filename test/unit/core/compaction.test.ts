import { expect, test } from "bun:test";
import {
  COMPACTION_AUTHOR,
  COMPACTION_EVENT,
  compactedConversation,
  compactionMetadata,
  conversationChars,
  cooldownTurns,
  countCompaction,
  estimateContextTokens,
  mechanicalSummary,
  planCompaction,
  readCompaction,
  summaryMessage,
  ZERO_CONTEXT_STATS,
} from "../../../src/core/compaction.ts";
import type { AuditEvent } from "../../../src/core/events.ts";
import type { ChatMessage } from "../../../src/core/model.ts";

const user = (text: string): ChatMessage => ({ role: "user", text });
const reply = (text: string): ChatMessage => ({ role: "assistant", text, toolCalls: [] });
const text = (chars: number) => "x".repeat(chars);
/** n turns of a 200-char prompt and a 200-char answer. */
const turns = (n: number): ChatMessage[] => Array.from({ length: n }, () => [user(text(200)), reply(text(200))]).flat();

test("estimated context: ceil(chars / 4), tool calls and tool output as JSON", () => {
  const call = { callId: "c1", name: "read_file", args: { path: "/a" } };
  const messages: ChatMessage[] = [
    user("abcd"),
    { role: "assistant", text: "ab", toolCalls: [call] },
    { role: "tool", callId: "c1", name: "read_file", output: { ok: true }, isError: false },
  ];
  const chars = 4 + 2 + JSON.stringify([call]).length + JSON.stringify({ ok: true }).length;
  expect(conversationChars(messages)).toBe(chars);
  expect(estimateContextTokens(messages)).toBe(Math.ceil(chars / 4));
});

test("no plan under 80% of the window; past it, the older turns are summarized and the last turn kept", () => {
  // 2 turns = 800 chars = 200 tokens: under 80% of 250 (200), over 80% of 240 (192).
  expect(planCompaction(turns(2), 250)).toBeUndefined();
  expect(planCompaction(turns(2), 240)).toEqual({ summarize: 2, keep: 2 });
});

test("the kept tail holds the recent turns that fit in 30% of the window, always the last one", () => {
  // 20 turns = 2000 tokens, past 80% of 2400. Keep budget 720 tokens = 2880 chars: 7 turns of 400.
  const history = turns(20);
  expect(planCompaction(history, 2400)).toEqual({ summarize: 26, keep: 14 });
  // A last turn larger than the keep budget is still kept whole.
  const big = [...turns(3), user(text(5000)), reply(text(10))];
  expect(planCompaction(big, 1000)).toEqual({ summarize: 6, keep: 2 });
});

test("the split falls on a user message: a tool call keeps its result", () => {
  const call = { callId: "c1", name: "read_file", args: {} };
  const history: ChatMessage[] = [
    ...turns(3),
    user("look"),
    { role: "assistant", text: "", toolCalls: [call] },
    { role: "tool", callId: "c1", name: "read_file", output: { content: text(300) }, isError: false },
    reply(text(100)),
  ];
  const plan = planCompaction(history, 300);
  expect(plan).toEqual({ summarize: 6, keep: 4 });
  expect(history[plan?.summarize ?? 0]).toEqual(user("look"));
});

test("forced (manual): everything but the last turn, whatever the window; too little to summarize: no plan", () => {
  expect(planCompaction(turns(1), 10, true)).toBeUndefined();
  expect(planCompaction([summaryMessage("s"), ...turns(1)], 10, true)).toBeUndefined();
  expect(planCompaction(turns(2), 100_000, true)).toEqual({ summarize: 2, keep: 2 });
});

test("the compacted conversation is the summary, then the kept tail", () => {
  const history = turns(3);
  const after = compactedConversation(history, "what happened", 2);
  expect(after).toHaveLength(3);
  expect(after[0]).toEqual(summaryMessage("what happened"));
  expect((after[0] as { text: string }).text).toContain("what happened");
  expect(after.slice(1)).toEqual(history.slice(4));
});

test("a mechanical summary names what went, quotes the last requests, and stays within its bound", () => {
  const summarized = [
    summaryMessage("an older summary"),
    ...Array.from({ length: 8 }, (_, index) => [user(`request ${index} ${text(300)}`), reply("done")]).flat(),
  ];
  const summary = mechanicalSummary(summarized, 800);
  expect(summary.length).toBeLessThanOrEqual(800);
  expect(summary).toStartWith("17 earlier messages were removed without a model summary.");
  expect(summary).toContain("request 7");
  expect(summary).not.toContain("request 2");
  expect(summary).not.toContain("an older summary");
  const lines = summary.split("\n").filter((line) => line.startsWith("- "));
  expect(lines.map((line) => line.slice(2, 11))).toEqual(lines.map((line) => line.slice(2, 11)).sort());
  // A tiny bound keeps the count line only.
  expect(mechanicalSummary(summarized, 30)).toBe("17 earlier messages were removed without a model summary.");
});

test("failures back off 1, 2, 4 ... 16 turns", () => {
  expect([0, 1, 2, 3, 5, 6, 10].map(cooldownTurns)).toEqual([0, 1, 2, 4, 16, 16, 16]);
});

test("a compaction row reads back as written; other rows and rows without a summary do not", () => {
  const record = {
    summary: "s",
    messagesSummarized: 4,
    messagesKept: 2,
    charsSummarized: 900,
    charsAfter: 300,
    mechanical: false,
    manual: true,
    model: "echo",
    usage: {
      inputTokens: 1,
      cachedInputTokens: 0,
      cacheWriteInputTokens: 0,
      outputTokens: 2,
      thoughtsTokens: 0,
      toolUseTokens: 0,
      totalTokens: 3,
    },
    cost: { costUsd: 0, costUsdUncachedReference: 0 },
  };
  const row = (author: string, name: string, metadata: Record<string, unknown>): AuditEvent => ({
    id: "1",
    ts: "t",
    invocationId: "c",
    author,
    kind: "audit",
    name,
    metadata,
  });
  expect(readCompaction(row(COMPACTION_AUTHOR, COMPACTION_EVENT, compactionMetadata(record)))).toEqual(record);
  expect(readCompaction(row("attach/interrupt", COMPACTION_EVENT, compactionMetadata(record)))).toBeUndefined();
  expect(readCompaction(row(COMPACTION_AUTHOR, COMPACTION_EVENT, { messages_kept: 2 }))).toBeUndefined();
  const stats = countCompaction(countCompaction(ZERO_CONTEXT_STATS, record), {
    ...record,
    charsSummarized: 100,
    charsAfter: 250,
  });
  expect(stats).toEqual({ compactions: 2, checkpoints: 0, totalCharsSummarized: 1000, charsAfterCompaction: 250 });
});
