/**
 * The pricing layers and lookup (core/pricing-book.ts), the refresh document formats
 * (pricing/pricing-document.ts), the refresh limiter, and the shipped table's shape.
 */
import { describe, expect, test } from "bun:test";
import { PricingBook, pricingKeys } from "../../../src/core/pricing-book.ts";
import { priceUsage } from "../../../src/core/usage.ts";
import { parsePricingDocument } from "../../../src/pricing/pricing-document.ts";
import { CallerLimiter } from "../../../src/pricing/refresh-limiter.ts";
import { SHIPPED_RATES, SHIPPED_RATES_BY_PROVIDER } from "../../../src/pricing/shipped-rates.ts";
import { resolvePricingSettings } from "../../../src/cli/pricing-flags.ts";

const rates = (input: number, output: number) => ({ inputUsdPerMTok: input, outputUsdPerMTok: output });

describe("PricingBook", () => {
  test("model ids match exactly, then without a provider prefix or a date suffix", () => {
    expect(pricingKeys("Anthropic/claude-sonnet-4-5-20250929")).toEqual([
      "anthropic/claude-sonnet-4-5-20250929",
      "claude-sonnet-4-5-20250929",
      "anthropic/claude-sonnet-4-5",
      "claude-sonnet-4-5",
    ]);
    expect(pricingKeys("gpt-4o-2024-08-06")).toEqual(["gpt-4o-2024-08-06", "gpt-4o"]);
    const book = new PricingBook(SHIPPED_RATES, "2025-01-01T00:00:00Z");
    expect(book.lookup("claude-sonnet-4-5-20250929")?.rates).toEqual(SHIPPED_RATES.get("claude-sonnet-4-5"));
    expect(book.lookup("openai/gpt-4o-mini")?.rates).toEqual(SHIPPED_RATES.get("gpt-4o-mini"));
    expect(book.lookup("echo")).toBeUndefined();
  });

  test("set wins over refresh, refresh over shipped; a refresh replaces the whole refreshed layer", () => {
    const book = new PricingBook(new Map([["m", rates(1, 2)]]), "2025-01-01T00:00:00Z");
    expect(
      book.replaceRefreshed(
        new Map([
          ["m", rates(1, 2)],
          ["n", rates(3, 4)],
        ]),
        "t1",
      ),
    ).toBe(1);
    expect(book.lookup("n")).toEqual({ rates: rates(3, 4), updatedAt: "t1", origin: "refresh" });
    book.set("M", rates(5, 6), "t2");
    expect(book.lookup("m")).toEqual({ rates: rates(5, 6), updatedAt: "t2", origin: "set" });
    expect(book.knownModels).toBe(2);
    expect(book.replaceRefreshed(new Map(), "t3")).toBe(0);
    expect(book.lookup("n")).toBeUndefined();
    expect(book.knownModels).toBe(1);
  });
});

describe("shipped table", () => {
  test("OpenAI, Anthropic and Google models, none for openai-compatible; cached below input; Anthropic bills cache writes", () => {
    expect(SHIPPED_RATES_BY_PROVIDER.openai.size).toBeGreaterThanOrEqual(5);
    expect(SHIPPED_RATES_BY_PROVIDER.anthropic.size).toBeGreaterThanOrEqual(5);
    expect(SHIPPED_RATES_BY_PROVIDER.google.size).toBeGreaterThanOrEqual(4);
    expect(SHIPPED_RATES_BY_PROVIDER["openai-compatible"].size).toBe(0);
    for (const [model, value] of SHIPPED_RATES) {
      expect({
        model,
        ok:
          value.inputUsdPerMTok > 0 &&
          value.outputUsdPerMTok >= value.inputUsdPerMTok &&
          (value.cachedUsdPerMTok ?? 0) <= value.inputUsdPerMTok,
      }).toEqual({ model, ok: true });
    }
    for (const value of SHIPPED_RATES_BY_PROVIDER.anthropic.values())
      expect(value.cacheWriteUsdPerMTok).toBe(value.inputUsdPerMTok * 1.25);
    // One Anthropic call by hand: 1000 uncached, 2000 cached, 500 written, 300 out on claude-sonnet-4-5.
    const cost = priceUsage(
      {
        inputTokens: 3500,
        cachedInputTokens: 2000,
        cacheWriteInputTokens: 500,
        outputTokens: 300,
        thoughtsTokens: 0,
        toolUseTokens: 0,
        totalTokens: 3800,
      },
      SHIPPED_RATES.get("claude-sonnet-4-5"),
    );
    expect(cost.costUsd).toBeCloseTo((1000 * 3 + 2000 * 0.3 + 500 * 3.75 + 300 * 15) / 1e6, 12);
    expect(cost.costUsdUncachedReference).toBeCloseTo((3500 * 3 + 300 * 15) / 1e6, 12);
  });
});

describe("pricing documents", () => {
  test("spar version 1: rates read, bad entries skipped and named", () => {
    const parsed = parsePricingDocument({
      version: 1,
      extra: true,
      models: {
        a: { input_usd_per_mtok: 1, output_usd_per_mtok: 2, cache_write_usd_per_mtok: 1.25, note: "x" },
        b: { input_usd_per_mtok: -1, output_usd_per_mtok: 2 },
      },
    });
    if (!parsed.ok) throw new Error(parsed.error);
    expect(parsed.value.format).toBe("spar-v1");
    expect([...parsed.value.rates]).toEqual([
      ["a", { inputUsdPerMTok: 1, outputUsdPerMTok: 2, cacheWriteUsdPerMTok: 1.25 }],
    ]);
    expect(parsed.value.skipped).toEqual(["b: input_usd_per_mtok must not be negative"]);
  });

  test("LiteLLM map: per-token costs become per-million without float noise; unpriced entries are ignored", () => {
    const parsed = parsePricingDocument({
      sample_spec: { input_cost_per_token: 0, output_cost_per_token: "n/a" },
      "gpt-4o": {
        input_cost_per_token: 2.5e-6,
        output_cost_per_token: 1e-5,
        cache_read_input_token_cost: 1.25e-6,
        cache_creation_input_token_cost: null,
      },
      "whisper-1": { input_cost_per_second: 0.0001 },
    });
    if (!parsed.ok) throw new Error(parsed.error);
    expect(parsed.value.format).toBe("litellm");
    expect(parsed.value.rates.get("gpt-4o")).toEqual({
      inputUsdPerMTok: 2.5,
      outputUsdPerMTok: 10,
      cachedUsdPerMTok: 1.25,
    });
    expect(parsed.value.skippedCount).toBe(1);
  });

  test("documents with nothing usable are errors", () => {
    expect(parsePricingDocument([])).toEqual({ ok: false, error: "pricing document must be a JSON object" });
    expect(parsePricingDocument({ version: 2, models: {} })).toMatchObject({
      ok: false,
      error: expect.stringContaining("version must be 1"),
    });
    expect(parsePricingDocument({ version: 1, models: [] })).toMatchObject({
      ok: false,
      error: expect.stringContaining('"models" must be an object'),
    });
    expect(parsePricingDocument({ version: 1, models: { x: {} } })).toMatchObject({
      ok: false,
      error: expect.stringContaining("no usable model rates"),
    });
    expect(parsePricingDocument({ hello: "world" })).toMatchObject({
      ok: false,
      error: expect.stringContaining("neither spar's format"),
    });
  });
});

test("the refresh limiter: burst 5, then one more every 6 s, per caller", () => {
  const limiter = new CallerLimiter();
  for (let i = 0; i < 5; i++) expect(limiter.take("alice", 0)).toEqual({ ok: true });
  expect(limiter.take("alice", 0)).toEqual({ ok: false, retryAfterSeconds: 6 });
  expect(limiter.take("bob", 0)).toEqual({ ok: true });
  expect(limiter.take("alice", 3000)).toEqual({ ok: false, retryAfterSeconds: 3 });
  expect(limiter.take("alice", 6000)).toEqual({ ok: true });
});

test("pricing settings: a URL, a relative file from cwd, refresh at start by default, bad values named", () => {
  const none = new Map();
  expect(resolvePricingSettings(new Map([["pricing-source", "https://x/p.json"]]), none, "/w")).toEqual({
    ok: true,
    value: { source: { kind: "url", url: "https://x/p.json" }, refreshOnStart: true },
  });
  expect(
    resolvePricingSettings(
      none,
      new Map<string, unknown>([
        ["pricing.source", "p.json"],
        ["pricing.refresh_on_start", false],
      ]),
      "/w",
    ),
  ).toEqual({ ok: true, value: { source: { kind: "file", path: "/w/p.json" }, refreshOnStart: false } });
  expect(resolvePricingSettings(none, none, "/w")).toEqual({
    ok: true,
    value: { source: undefined, refreshOnStart: false },
  });
  expect(resolvePricingSettings(none, new Map([["pricing.source", 3]]), "/w")).toEqual({
    ok: false,
    error: "config key pricing.source must be an http(s) URL or a file path",
  });
  expect(resolvePricingSettings(none, new Map([["pricing.refresh_on_start", "yes"]]), "/w")).toEqual({
    ok: false,
    error: "config key pricing.refresh_on_start must be true or false",
  });
});
