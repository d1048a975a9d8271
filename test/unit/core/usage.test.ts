import { expect, test } from "bun:test";
import {
  type TokenUsage,
  UsageLedger,
  estimateTokens,
  priceUsage,
  uncachedInputTokens,
} from "../../../src/core/usage.ts";

const usage = (overrides: Partial<TokenUsage>): TokenUsage => ({
  inputTokens: 0,
  cachedInputTokens: 0,
  cacheWriteInputTokens: 0,
  outputTokens: 0,
  thoughtsTokens: 0,
  toolUseTokens: 0,
  totalTokens: 0,
  ...overrides,
});

test("echo estimate is ceil(chars / 4)", () => {
  expect(estimateTokens("")).toBe(0);
  expect(estimateTokens("abcd")).toBe(1);
  expect(estimateTokens("abcde")).toBe(2);
});

test("cost prices cached, cache-write and uncached input disjointly; the reference is the cache-off cost", () => {
  // 1,000,000 input = 600k cached + 100k cache-write + 300k uncached; 200k output + 50k thoughts.
  const call = usage({
    inputTokens: 1_000_000,
    cachedInputTokens: 600_000,
    cacheWriteInputTokens: 100_000,
    outputTokens: 200_000,
    thoughtsTokens: 50_000,
  });
  expect(uncachedInputTokens(call)).toBe(300_000);
  const cost = priceUsage(call, {
    inputUsdPerMTok: 3,
    cachedUsdPerMTok: 0.3,
    cacheWriteUsdPerMTok: 3.75,
    outputUsdPerMTok: 15,
  });
  // 0.3*3 + 0.6*0.3 + 0.1*3.75 + 0.25*15 = 0.9 + 0.18 + 0.375 + 3.75
  expect(cost.costUsd).toBeCloseTo(5.205, 10);
  // 1.0*3 + 0.25*15
  expect(cost.costUsdUncachedReference).toBeCloseTo(6.75, 10);
});

test("the uncached reference is never below the real cost (cache writes dearer than input)", () => {
  const call = usage({ inputTokens: 1_000_000, cacheWriteInputTokens: 1_000_000 });
  const cost = priceUsage(call, { inputUsdPerMTok: 1, cacheWriteUsdPerMTok: 2, outputUsdPerMTok: 1 });
  expect(cost.costUsd).toBeCloseTo(2, 10);
  expect(cost.costUsdUncachedReference).toBeCloseTo(2, 10);
});

test("no rates means zero cost", () => {
  expect(priceUsage(usage({ inputTokens: 10, outputTokens: 10 }), undefined)).toEqual({
    costUsd: 0,
    costUsdUncachedReference: 0,
  });
});

test("the ledger keeps overall, per-model and per-turn totals; secondary fields are omitted when zero", () => {
  const ledger = new UsageLedger();
  ledger.record({
    turn: 1,
    ts: "2026-01-01T00:00:00Z",
    model: "a",
    usage: usage({ inputTokens: 100, cachedInputTokens: 40, outputTokens: 10, totalTokens: 110 }),
    cost: { costUsd: 0.5, costUsdUncachedReference: 0.7 },
  });
  ledger.record({
    turn: 2,
    ts: "2026-01-01T00:01:00Z",
    model: "b",
    usage: usage({ inputTokens: 20, outputTokens: 5, totalTokens: 25 }),
    cost: { costUsd: 0.1, costUsdUncachedReference: 0.1 },
  });
  const info = ledger.toUsageInfo();
  expect(info.overall).toEqual({
    input_tokens: 120,
    input_tokens_cached: 40,
    input_tokens_uncached: 80,
    output_tokens: 15,
    turns: 2,
    cost_usd: 0.6,
    cost_usd_uncached_reference: 0.7999999999999999,
  });
  expect(Object.keys(info.per_model ?? {})).toEqual(["a", "b"]);
  expect(info.per_turn?.[0]).toEqual({
    turn: 1,
    ts: "2026-01-01T00:00:00Z",
    model: "a",
    input_tokens: 100,
    input_tokens_cached: 40,
    input_tokens_uncached: 60,
    output_tokens: 10,
    total_tokens: 110,
    cost_usd: 0.5,
    cost_usd_uncached_reference: 0.7,
  });
  const cached = info.overall.input_tokens_cached ?? 0;
  const write = info.overall.input_tokens_cache_write ?? 0;
  const uncached = info.overall.input_tokens_uncached ?? 0;
  expect(cached + write + uncached).toBe(info.overall.input_tokens);
  expect(ledger.toUsageUpdate()).toMatchObject({
    total: { inputTokens: 120, outputTokens: 15, turns: 2 },
    lastTurn: { model: "b", inputTokens: 20 },
  });
  expect([...ledger.toUsageUpdate().byModel.keys()]).toEqual(["a", "b"]);
});

test("an empty ledger is the zero body", () => {
  expect(new UsageLedger().toUsageInfo()).toEqual({
    overall: { input_tokens: 0, output_tokens: 0, turns: 0, cost_usd: 0 },
  });
});
