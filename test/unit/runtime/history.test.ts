import { expect, test } from "bun:test";
import {
  COMPACTION_AUTHOR,
  COMPACTION_EVENT,
  compactedConversation,
  compactionMetadata,
} from "../../../src/core/compaction.ts";
import type { CommittedRow, SessionEvent } from "../../../src/core/events.ts";
import { type TokenUsage, UsageLedger } from "../../../src/core/usage.ts";
import { contextInfoOf, rebuildFromRows, usageInfoOf } from "../../../src/runtime/history.ts";

const usage = (inputTokens: number): TokenUsage => ({
  inputTokens,
  cachedInputTokens: 0,
  cacheWriteInputTokens: 0,
  outputTokens: 1,
  thoughtsTokens: 0,
  toolUseTokens: 0,
  totalTokens: inputTokens + 1,
});
const header = (n: number, invocationId: string, author: string) => ({
  id: `id-${n}`,
  ts: `2026-01-01T00:00:${String(n % 60).padStart(2, "0")}Z`,
  invocationId,
  author,
});

/** Rows of `count` turns: a prompt and a one-call answer each (input tokens = the turn number). */
function turnRows(count: number, from = 1): SessionEvent[] {
  return Array.from({ length: count }, (_, index) => {
    const turn = from + index;
    return [
      { ...header(turn, `e-${turn}`, "user"), kind: "user-message", text: `prompt ${turn}`, promptId: `p-${turn}` },
      {
        ...header(turn, `e-${turn}`, "spar"),
        kind: "model-response",
        model: "echo",
        text: `answer ${turn}`,
        toolCalls: [],
        turnComplete: true,
        finishReason: "stop",
        usage: usage(turn),
        cost: { costUsd: turn / 100, costUsdUncachedReference: turn / 100 },
      },
    ] as SessionEvent[];
  }).flat();
}

const committed = (events: SessionEvent[]): CommittedRow[] => events.map((event, index) => ({ seq: index + 1, event }));

test("a compaction row rewrites the rebuilt conversation exactly as the live compaction did, and counts its model call", () => {
  const before = turnRows(3);
  const live = rebuildFromRows(committed(before)).history;
  const record = {
    summary: "three turns",
    messagesSummarized: 4,
    messagesKept: 2,
    charsSummarized: 40,
    charsAfter: 30,
    mechanical: false,
    manual: false,
    model: "echo",
    usage: usage(50),
    cost: { costUsd: 0.5, costUsdUncachedReference: 0.5 },
  };
  const compaction: SessionEvent = {
    ...header(9, "c-1", COMPACTION_AUTHOR),
    kind: "audit",
    name: COMPACTION_EVENT,
    metadata: compactionMetadata(record),
  };
  const after = turnRows(1, 4);
  const rebuilt = rebuildFromRows(committed([...before, compaction, ...after]));
  const expected = [...compactedConversation(live, "three turns", 2), ...rebuildFromRows(committed(after)).history];
  expect(rebuilt.history).toEqual(expected);
  expect(rebuilt.history).toHaveLength(5);
  expect(contextInfoOf(rebuilt.context)).toEqual({
    compactions: 1,
    checkpoints: 0,
    chars_after_compaction: 30,
    total_chars_summarized: 40,
  });
  // The summary call counts in the totals (tokens and cost) but is not a turn.
  const info = rebuilt.ledger.toUsageInfo();
  expect(info.overall.turns).toBe(4);
  expect(info.overall.input_tokens).toBe(1 + 2 + 3 + 4 + 50);
  expect(info.per_turn?.map((turn) => turn.input_tokens)).toEqual([1, 2, 3, 4]);
  expect(rebuilt.ledger.sessionCostUsd).toBeCloseTo(0.6, 10);
});

test("the ledger keeps only its recent per-turn records; GET /usage rebuilds the older ones from the log", async () => {
  const rows = committed(turnRows(7));
  const bounded = rebuildFromRows(rows, 3).ledger;
  expect(bounded.turns).toBe(7);
  expect(bounded.complete).toBe(false);
  expect(bounded.recentTurns.map((record) => record.turn)).toEqual([5, 6, 7]);
  expect(bounded.toUsageUpdate().lastTurn?.inputTokens).toBe(7);
  const full = rebuildFromRows(rows).ledger;
  expect(full.complete).toBe(true);
  let reads = 0;
  const info = await usageInfoOf(bounded, () => {
    reads++;
    return Promise.resolve(rows);
  });
  expect(reads).toBe(1);
  expect(info).toEqual(full.toUsageInfo());
  expect(info.per_turn?.map((turn) => turn.turn)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  // A turn the log holds but the ledger has not recorded yet (still running) is left out.
  const inFlight = committed(turnRows(8));
  expect((await usageInfoOf(bounded, () => Promise.resolve(inFlight))).per_turn?.map((turn) => turn.turn)).toEqual([
    1, 2, 3, 4, 5, 6, 7,
  ]);
  // A complete ledger never reads the log.
  await usageInfoOf(full, () => Promise.reject(new Error("read")));
});

test("recording past the bound keeps totals exact", () => {
  const ledger = new UsageLedger(2);
  for (let turn = 1; turn <= 5; turn++)
    ledger.record({ turn, ts: "", model: "m", usage: usage(turn), cost: { costUsd: 1, costUsdUncachedReference: 1 } });
  expect(ledger.turns).toBe(5);
  expect(ledger.toUsageInfo().overall).toMatchObject({ input_tokens: 15, turns: 5, cost_usd: 5 });
  expect(ledger.toUsageInfo().per_turn?.map((turn) => turn.turn)).toEqual([4, 5]);
});
