/**
 * The token-burn detector (D403): a session's input + output + thoughts tokens per minute over
 * 15m against the median of its burning peers, a warning on the second poll in a row at
 * `--burn-multiple` and not on the first; the budget projected exhausted within `--burn-eta` (or
 * exhausted) one critical; both forgotten when they end, so they page again; ended sessions
 * forgotten; malformed answers read as absent; the flags read by the settings reader and bounded.
 */
import { expect, test } from "bun:test";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import {
  TOKEN_BURN_DEFAULTS,
  TOKEN_BURN_POLL,
  TOKEN_BURN_SPEC,
  TokenBurnDetector,
  type TokenBurnSettings,
} from "../../../src/watcher/core/sources/token-burn-detector.ts";
import { sourceSettings } from "../../../src/watcher/sources/source-registry.ts";

const MIN = 60_000;
const T0 = Date.parse("2026-11-29T10:00:00Z");

/** Cumulative usage per session id (app `spar`): tokens as input+output+thoughts split 50/40/10, cost in USD. */
type Usage = Record<string, { tokens: number; cost?: number }>;

function answer(usage: Usage): unknown {
  return {
    sessions: Object.entries(usage).map(([id, { tokens, cost }]) => ({
      app: "spar",
      sessionID: id,
      usage: {
        overall: {
          input_tokens: tokens * 0.5,
          output_tokens: tokens * 0.4,
          thoughts_tokens: tokens * 0.1,
          turns: 1,
          cost_usd: cost ?? 0,
        },
      },
    })),
  };
}

/** A detector fed by a running tally: `step(minutes, growth)` adds each session's growth and polls. */
function fleet(settings: Partial<TokenBurnSettings> = {}) {
  const detector = new TokenBurnDetector({ ...TOKEN_BURN_DEFAULTS, ...settings });
  const totals: Usage = {};
  let now = T0;
  return {
    detector,
    step(minutes: number, growth: Record<string, number | { tokens: number; cost?: number }>) {
      now += minutes * MIN;
      for (const id of Object.keys(totals)) if (!(id in growth)) delete totals[id];
      for (const [id, grown] of Object.entries(growth)) {
        const add = typeof grown === "number" ? { tokens: grown, cost: 0 } : grown;
        const before = totals[id] ?? { tokens: 0, cost: 0 };
        totals[id] = { tokens: before.tokens + add.tokens, cost: (before.cost ?? 0) + (add.cost ?? 0) };
      }
      return detector.polled(TOKEN_BURN_POLL, answer(totals), now);
    },
  };
}

const steady = (hot: number) => ({ a: hot, b: 1000, c: 1000, d: 1200 });

test("the rate trigger: 4× the peers' median on 2 polls in a row is one warning, not after one", () => {
  const { step } = fleet();
  expect(step(0, steady(0))).toEqual([]); // the first answer only fills state
  expect(step(1, steady(4000))).toEqual([]); // 4× the median (1000) once
  const fired = step(1, steady(4000));
  expect(fired).toMatchObject([
    {
      kind: "token.burn",
      reason: "token_burn",
      severity: "warning",
      uid: "session:spar/a",
      name: "spar/a",
      namespace: "",
      kindOfObject: "Session",
      type: "",
      eventCount: 1,
      firstSeen: T0 + 2 * MIN,
    },
  ]);
  expect(fired[0]?.message).toContain("4000 tokens/min");
  expect(fired[0]?.message).toContain("4.0× the median of 3 other sessions (1000 tokens/min)");
  expect(step(1, steady(4000))).toEqual([]); // one ongoing burn pages once
});

test("just below the multiple never fires; a poll back under breaks the run of two", () => {
  const below = fleet();
  below.step(0, steady(0));
  for (let poll = 0; poll < 5; poll += 1) expect(below.step(1, steady(3990))).toEqual([]);

  const broken = fleet();
  broken.step(0, steady(0));
  expect(broken.step(1, steady(8000))).toEqual([]);
  expect(broken.step(1, { a: 0, b: 9000, c: 9000, d: 9000 })).toEqual([]); // peers catch up: a is under
  expect(broken.step(1, steady(60_000))).toEqual([]); // over again, once
  expect(broken.step(1, steady(60_000))).toMatchObject([{ reason: "token_burn", uid: "session:spar/a" }]);
});

test("--burn-multiple is the multiple: at 2 a double rate fires", () => {
  const { step } = fleet({ multiple: 2 });
  step(0, steady(0));
  step(1, steady(2000));
  expect(step(1, steady(2000))).toMatchObject([{ reason: "token_burn" }]);
});

test("a burn that falls back clears and pages again on its next run of two", () => {
  const { step, detector } = fleet();
  step(0, steady(0));
  step(1, steady(5000));
  expect(step(1, steady(5000))).toHaveLength(1);
  // Quiet until the window no longer holds the burst: the rate falls under 4× and the burn clears.
  for (let poll = 0; poll < 16; poll += 1) expect(step(1, steady(1000))).toEqual([]);
  expect(detector.size).toBe(4);
  step(1, steady(50_000));
  expect(step(1, steady(50_000))).toMatchObject([{ reason: "token_burn", uid: "session:spar/a" }]);
});

test("no burning peers, no judgement: an idle fleet or a lone session never burns by the multiple", () => {
  const idle = fleet();
  idle.step(0, { a: 0, b: 0, c: 0 });
  for (let poll = 0; poll < 3; poll += 1) expect(idle.step(1, { a: 100_000, b: 0, c: 0 })).toEqual([]);
  const alone = fleet();
  alone.step(0, { a: 0 });
  for (let poll = 0; poll < 3; poll += 1) expect(alone.step(1, { a: 100_000 })).toEqual([]);
  // One burning peer is a median of one.
  const pair = fleet();
  pair.step(0, { a: 0, b: 0 });
  pair.step(1, { a: 4000, b: 1000 });
  expect(pair.step(1, { a: 4000, b: 1000 })).toMatchObject([{ uid: "session:spar/a" }]);
});

test("the budget trigger: projected exhausted within --burn-eta is one critical, not beyond it", () => {
  const { step } = fleet({ budgetUsd: 10, etaMs: 30 * MIN });
  expect(step(0, { a: { tokens: 0, cost: 1 } })).toEqual([]);
  // $0.25/min with $8.75 left: 35m away, beyond the horizon.
  expect(step(1, { a: { tokens: 100, cost: 0.25 } })).toEqual([]);
  // Window rate (0.25 + 0.35) / 2 = $0.30/min with $8.40 left: 28m away.
  const fired = step(1, { a: { tokens: 100, cost: 0.35 } });
  expect(fired).toMatchObject([
    { kind: "token.burn", reason: "token_budget", severity: "critical", uid: "session:spar/a" },
  ]);
  expect(fired[0]?.message).toBe(
    "agent session spar/a has spent $1.60 of its $10.00 budget; at $0.30/min it runs out in 28m0s (--burn-eta 30m0s)",
  );
  expect(step(1, { a: { tokens: 100, cost: 0.3 } })).toEqual([]); // once while it holds
});

test("an exhausted budget is critical once; a slowed spend clears the projection and it pages again", () => {
  const exhausted = fleet({ budgetUsd: 1 });
  exhausted.step(0, { a: { tokens: 0, cost: 2 } });
  const fired = exhausted.step(1, { a: { tokens: 0, cost: 0 } });
  expect(fired).toMatchObject([{ reason: "token_budget", severity: "critical" }]);
  expect(fired[0]?.message).toBe("agent session spar/a has spent $2.00, over its $1.00 budget");
  expect(exhausted.step(1, { a: { tokens: 0, cost: 0 } })).toEqual([]);

  const slowed = fleet({ budgetUsd: 100, etaMs: 30 * MIN });
  slowed.step(0, { a: { tokens: 0, cost: 0 } });
  expect(slowed.step(1, { a: { tokens: 0, cost: 10 } })).toHaveLength(1);
  // Spending stops: the window's rate falls until the projection is beyond 30m: cleared.
  for (let poll = 0; poll < 16; poll += 1) slowed.step(1, { a: { tokens: 0, cost: 0 } });
  slowed.step(1, { a: { tokens: 0, cost: 0 } });
  expect(slowed.step(1, { a: { tokens: 0, cost: 50 } })).toMatchObject([{ reason: "token_budget" }]);
});

test("a budget of 0 disarms the budget trigger", () => {
  const { step } = fleet({ budgetUsd: 0 });
  step(0, { a: { tokens: 0, cost: 0 } });
  expect(step(1, { a: { tokens: 0, cost: 1000 } })).toEqual([]);
});

test("an ended session is forgotten: state is bounded and a returning id starts over", () => {
  const { step, detector } = fleet();
  step(0, steady(0));
  step(1, steady(5000));
  expect(detector.size).toBe(4);
  expect(step(1, { b: 1000, c: 1000, d: 1000 })).toEqual([]); // a ended before its second poll over
  expect(detector.size).toBe(3);
  expect(step(1, steady(5000))).toEqual([]); // back: one sample, no rate yet
  expect(step(1, steady(5000))).toEqual([]); // first poll over
  expect(step(1, steady(5000))).toHaveLength(1);
  // A day of polls keeps a window's worth of samples per session: 15 one-minute polls plus its base.
  for (let poll = 0; poll < 24 * 60; poll += 1) step(1, steady(1000));
  expect(detector.samples).toBe(4 * 16);
  step(1, {});
  expect(detector.size).toBe(0);
  expect(detector.samples).toBe(0);
});

test("malformed answers change nothing and never throw; unreadable usage is no sample", () => {
  const detector = new TokenBurnDetector(TOKEN_BURN_DEFAULTS);
  for (const body of [undefined, null, 42, "x", [], {}, { sessions: "no" }, { sessions: [null, 1, "a", {}] }])
    expect(detector.polled(TOKEN_BURN_POLL, body, T0)).toEqual([]);
  expect(detector.polled(TOKEN_BURN_POLL, undefined, T0, "HTTP 401")).toEqual([]);
  expect(detector.size).toBe(0);
  const odd = {
    sessions: [
      { app: "spar", sessionID: "x", usage: { overall: { input_tokens: "many", output_tokens: 1 } } },
      { app: "spar", sessionID: "y", usage: { overall: { input_tokens: -5, output_tokens: 1 } } },
      { app: "spar", sessionID: "z" },
      { app: 7, sessionID: "w", usage: {} },
    ],
  };
  expect(detector.polled(TOKEN_BURN_POLL, odd, T0)).toEqual([]);
  expect(detector.polled(TOKEN_BURN_POLL, odd, T0 + MIN)).toEqual([]);
  expect(detector.size).toBe(3); // listed, so not ended; never judged
});

test("a failed poll keeps the state and the run of polls over", () => {
  const { step, detector } = fleet();
  step(0, steady(0));
  step(1, steady(4000));
  expect(detector.polled(TOKEN_BURN_POLL, undefined, T0 + 90_000, "fetch failed")).toEqual([]);
  expect(detector.size).toBe(4);
  expect(step(1, steady(4000))).toHaveLength(1);
});

test("a counter that goes back (a new ledger under the same id) starts its window over", () => {
  const detector = new TokenBurnDetector(TOKEN_BURN_DEFAULTS);
  const poll = (at: number, a: number) =>
    detector.polled(
      TOKEN_BURN_POLL,
      answer({ a: { tokens: a }, b: { tokens: at * 10 }, c: { tokens: at * 10 } }),
      T0 + at * MIN,
    );
  poll(0, 1_000_000);
  poll(1, 1_000_100);
  expect(poll(2, 10)).toEqual([]); // no negative rate, no rate at all yet
  expect(poll(3, 100_000)).toEqual([]);
  expect(poll(4, 200_000)).toMatchObject([{ uid: "session:spar/a" }]);
});

test("the spec is namespace-scoped, needs no grants and watches nothing of the API server", () => {
  expect(TOKEN_BURN_SPEC).toMatchObject({ name: "token-burn", scope: "namespace", required: [], watches: [] });
  expect(TOKEN_BURN_SPEC.detector(TOKEN_BURN_DEFAULTS)).toBeInstanceOf(TokenBurnDetector);
});

test("the flags reach the settings; out-of-range values are refused", () => {
  const base = ["--daemon-url=http://127.0.0.1:1", "--token-env=T"];
  const defaults = watcherConfigFromArgv(base);
  if (!defaults.ok) throw new Error(defaults.error);
  expect(sourceSettings("token-burn", defaults.value)).toEqual(TOKEN_BURN_DEFAULTS);
  const set = watcherConfigFromArgv([...base, "--burn-multiple=2.5", "--token-budget-usd=12.5", "--burn-eta=45m"]);
  if (!set.ok) throw new Error(set.error);
  expect(sourceSettings("token-burn", set.value)).toEqual({
    ...TOKEN_BURN_DEFAULTS,
    multiple: 2.5,
    budgetUsd: 12.5,
    etaMs: 45 * MIN,
  });
  for (const [flag, named] of [
    ["--burn-multiple=1", "burn-multiple"],
    ["--token-budget-usd=-1", "token-budget-usd"],
    ["--burn-eta=0s", "burn-eta"],
    ["--token-poll=0s", "token-poll"],
    ["--token-endpoint=http://127.0.0.1:1/", "token-endpoint"],
    ["--token-endpoint=ftp://x", "token-endpoint"],
  ] as const) {
    const refused = watcherConfigFromArgv([...base, flag]);
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.error).toContain(named);
  }
});
