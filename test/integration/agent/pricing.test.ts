/**
 * Pricing in a real daemon: the shipped table on GET /pricing, POST /pricing/set (400s naming
 * the bad field, 204, set wins), the cost of a scripted turn after a set (turn-complete and
 * GET /usage against hand-computed numbers), POST /pricing/refresh from a local HTTP server and
 * from a file (spar and LiteLLM formats, a failing source changes nothing), the 429 limiter, and
 * 501 without a source.
 */
import { expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { SHIPPED_RATES } from "../../../src/pricing/shipped-rates.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { type Daemon, postJson, tempDir, waitFor } from "../../support/daemon.ts";
import { type ScriptedDaemon, say, startScripted } from "../../support/scripted.ts";

const ZERO_TIME = "0001-01-01T00:00:00Z";
const scope = daemonScope();

async function daemon(args: string[] = []): Promise<{ daemon: Daemon; base: string }> {
  const started = await scope.start({ args });
  return { daemon: started, base: `${started.baseUrl}/sessions/default` };
}

const getPricing = async (base: string) => (await (await fetch(`${base}/pricing`)).json()) as Record<string, unknown>;

test("GET /pricing: the shipped table, no source, echo unpriced", async () => {
  const { base } = await daemon();
  const info = await getPricing(base);
  expect(info).toEqual({
    source: "shipped",
    last_refresh: ZERO_TIME,
    known_models: SHIPPED_RATES.size,
    current_model: "echo",
    rate: null,
  });
  expect(SHIPPED_RATES.size).toBeGreaterThanOrEqual(20);
  const refresh = await postJson(`${base}/pricing/refresh`);
  expect(refresh.status).toBe(501);
  expect(((await refresh.json()) as { error: string }).error).toContain("--pricing-source");
});

test("POST /pricing/set: bad bodies are 400 naming the field; a good one is 204 and shows on GET", async () => {
  const { base } = await daemon();
  const bad: Array<[unknown, string]> = [
    [{}, "model"],
    [{ model: "", input_usd_per_mtok: 1, output_usd_per_mtok: 1 }, "model"],
    [{ model: "echo", output_usd_per_mtok: 1 }, "input_usd_per_mtok"],
    [{ model: "echo", input_usd_per_mtok: -1, output_usd_per_mtok: 1 }, "input_usd_per_mtok"],
    [{ model: "echo", input_usd_per_mtok: 1, output_usd_per_mtok: "2" }, "output_usd_per_mtok"],
    [{ model: "echo", input_usd_per_mtok: 1, output_usd_per_mtok: 2, cached_usd_per_mtok: 1e9 }, "cached_usd_per_mtok"],
    [
      { model: "echo", input_usd_per_mtok: 1, output_usd_per_mtok: 2, cache_write_usd_per_mtok: null },
      "cache_write_usd_per_mtok",
    ],
    [[1, 2], "must be a JSON object"],
  ];
  for (const [body, field] of bad) {
    const response = await postJson(`${base}/pricing/set`, body);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toContain(field);
  }
  expect((await postJson(`${base}/pricing/set`)).status).toBe(400);
  expect((await postJson(`${base}/pricing/set`, "{nope")).status).toBe(400);
  const set = await postJson(`${base}/pricing/set`, {
    model: "echo",
    input_usd_per_mtok: 2,
    output_usd_per_mtok: 8,
    cached_usd_per_mtok: 0.5,
  });
  expect(set.status).toBe(204);
  const info = await getPricing(base);
  expect(info.current_model).toBe("echo");
  expect(info.current).toMatchObject({
    input_usd_per_mtok: 2,
    output_usd_per_mtok: 8,
    cached_usd_per_mtok: 0.5,
    origin: "set",
  });
  expect((info.current as { cache_write_usd_per_mtok?: number }).cache_write_usd_per_mtok).toBeUndefined();
  expect(Date.parse(String((info.current as { updated_at: string }).updated_at))).toBeGreaterThan(Date.now() - 60_000);
  expect(info.rate).toEqual(info.current);
  expect(info.known_models).toBe(SHIPPED_RATES.size + 1);
});

test("a scripted turn after /pricing/set costs the hand-computed amount on turn-complete and GET /usage", async () => {
  const usageMetadata = {
    promptTokenCount: 1000,
    candidatesTokenCount: 200,
    cachedContentTokenCount: 400,
    cacheWriteTokenCount: 100,
    thoughtsTokenCount: 50,
  };
  const scripted: ScriptedDaemon = await startScripted([
    say("free", { usageMetadata }),
    say("priced", { usageMetadata }),
  ]);
  scope.defer(scripted, (started) => started.stop());
  const base = `${scripted.daemon.baseUrl}/sessions/default`;
  await postJson(`${base}/inject`, { message: "one" });
  const first = await scripted.events.waitFor((frame) => frame.event === "turn-complete");
  expect(first.data.cost_usd).toBe(0);
  const set = await postJson(`${base}/pricing/set`, {
    model: "scripted",
    input_usd_per_mtok: 3,
    cached_usd_per_mtok: 0.3,
    cache_write_usd_per_mtok: 3.75,
    output_usd_per_mtok: 15,
  });
  expect(set.status).toBe(204);
  const mark = scripted.events.frames.length;
  await postJson(`${base}/inject`, { message: "two" });
  const second = await scripted.events.waitFor((frame) => frame.event === "turn-complete", 10_000, mark);
  // 500 uncached x $3 + 400 cached x $0.30 + 100 cache-write x $3.75 + (200 out + 50 thoughts) x $15, per million.
  const cost = (500 * 3 + 400 * 0.3 + 100 * 3.75 + 250 * 15) / 1e6;
  const reference = (1000 * 3 + 250 * 15) / 1e6;
  expect(cost).toBeCloseTo(0.005745, 12);
  expect(second.data.cost_usd as number).toBeCloseTo(cost, 12);
  const usage = (await (await fetch(`${base}/usage`)).json()) as {
    overall: Record<string, number>;
    per_turn: Array<Record<string, number>>;
  };
  expect(usage.overall.cost_usd as number).toBeCloseTo(cost, 12);
  expect(usage.overall.cost_usd_uncached_reference as number).toBeCloseTo(reference, 12);
  expect(usage.per_turn[0]?.cost_usd).toBe(0);
  expect(usage.per_turn[1]?.cost_usd as number).toBeCloseTo(cost, 12);
  expect(usage.per_turn[1]).toMatchObject({
    input_tokens: 1000,
    input_tokens_cached: 400,
    input_tokens_cache_write: 100,
    input_tokens_uncached: 500,
    output_tokens: 200,
    thoughts_tokens: 50,
  });
}, 20_000);

test("POST /pricing/refresh from a local server: rates replace the shipped ones, set still wins, a failing source changes nothing", async () => {
  let status = 200;
  let served: unknown = {
    version: 1,
    models: {
      echo: { input_usd_per_mtok: 1, output_usd_per_mtok: 4 },
      "gpt-4o": { input_usd_per_mtok: 2.5, output_usd_per_mtok: 10, cached_usd_per_mtok: 1.25 },
      "brand-new-model": {
        input_usd_per_mtok: 7,
        output_usd_per_mtok: 21,
        cached_usd_per_mtok: 0.7,
        cache_write_usd_per_mtok: 8.75,
      },
      broken: { input_usd_per_mtok: "cheap" },
    },
  };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () => (status === 200 ? Response.json(served) : new Response("down", { status })),
  });
  scope.defer(server, (listener) => listener.stop(true));
  const url = `http://127.0.0.1:${server.port}/prices.json`;
  const { base } = await daemon([`--pricing-source=${url}`, "--pricing-refresh-on-start=false"]);
  expect(await getPricing(base)).toMatchObject({ source: url, last_refresh: ZERO_TIME, rate: null });

  const refresh = await postJson(`${base}/pricing/refresh`);
  expect(refresh.status).toBe(200);
  const body = (await refresh.json()) as {
    updated: number;
    known_models: number;
    last_refresh: string;
    detail?: string;
  };
  // echo and brand-new-model are new; gpt-4o matches the shipped rates exactly.
  expect(body.updated).toBe(2);
  expect(body.known_models).toBe(SHIPPED_RATES.size + 2);
  expect(body.last_refresh).not.toBe(ZERO_TIME);
  expect(body.detail).toContain("broken: input_usd_per_mtok must be a number");
  const info = await getPricing(base);
  expect(info.current).toMatchObject({
    input_usd_per_mtok: 1,
    output_usd_per_mtok: 4,
    origin: "refresh",
    updated_at: body.last_refresh,
  });
  expect(info.last_refresh).toBe(body.last_refresh);

  expect(
    (await postJson(`${base}/pricing/set`, { model: "echo", input_usd_per_mtok: 9, output_usd_per_mtok: 9 })).status,
  ).toBe(204);
  served = { version: 1, models: { echo: { input_usd_per_mtok: 5, output_usd_per_mtok: 5 } } };
  const second = (await (await postJson(`${base}/pricing/refresh`)).json()) as { last_refresh: string };
  expect((await getPricing(base)).current).toMatchObject({ input_usd_per_mtok: 9, origin: "set" });

  status = 503;
  const failed = (await (await postJson(`${base}/pricing/refresh`)).json()) as {
    updated: number;
    detail: string;
    last_refresh: string;
  };
  expect(failed.updated).toBe(0);
  expect(failed.detail).toContain("HTTP 503");
  expect(failed.last_refresh).toBe(second.last_refresh);
  const after = await getPricing(base);
  expect(after.last_refresh).toBe(second.last_refresh);
  expect(after.known_models).toBe(SHIPPED_RATES.size + 1);
}, 20_000);

test("refresh from a file: LiteLLM format at start, a bad document later changes nothing, the limiter answers 429", async () => {
  const file = join(tempDir(), "prices.json");
  writeFileSync(
    file,
    JSON.stringify({
      sample_spec: { max_tokens: "set to max output tokens" },
      echo: {
        input_cost_per_token: 2.5e-6,
        output_cost_per_token: 1e-5,
        cache_read_input_token_cost: 1.25e-7,
        litellm_provider: "custom",
        mode: "chat",
      },
      "dall-e-3": { output_cost_per_image: 0.04 },
    }),
  );
  const { daemon: running, base } = await daemon([`--pricing-source=${file}`]);
  const started = await waitFor(
    async () => {
      const info = await getPricing(base);
      return info.last_refresh !== ZERO_TIME ? info : undefined;
    },
    5000,
    "the refresh at start",
  );
  expect(started.source).toBe(file);
  expect(started.current).toMatchObject({
    input_usd_per_mtok: 2.5,
    output_usd_per_mtok: 10,
    cached_usd_per_mtok: 0.125,
    origin: "refresh",
  });
  expect(running.log()).toContain("pricing refresh at start: 1 models updated");

  writeFileSync(file, "{not json");
  const bad = (await (await postJson(`${base}/pricing/refresh`)).json()) as {
    updated: number;
    detail: string;
    last_refresh: string;
  };
  expect(bad.updated).toBe(0);
  expect(bad.detail).toContain("is not JSON");
  expect(bad.last_refresh).toBe(started.last_refresh as string);
  expect((await getPricing(base)).current).toMatchObject({ input_usd_per_mtok: 2.5 });

  // The bucket holds 5: the start refresh did not use it, the call above took one.
  const statuses: number[] = [];
  let limited: Response | undefined;
  for (let i = 0; i < 5; i++) {
    const response = await postJson(`${base}/pricing/refresh`);
    statuses.push(response.status);
    if (response.status === 429) limited = response;
    else await response.body?.cancel();
  }
  expect(statuses).toEqual([200, 200, 200, 200, 429]);
  expect(limited?.headers.get("retry-after")).toMatch(/^\d+$/);
  const limitedBody = (await limited?.json()) as { error: string; retry_after_seconds: number };
  expect(limitedBody.error).toBe("rate limited");
  expect(limitedBody.retry_after_seconds).toBeGreaterThanOrEqual(1);
}, 20_000);
