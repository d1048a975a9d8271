/**
 * Guardrails in a real daemon driven by the scripted model: the watchdog (enforce halts and cuts
 * the turn; feedback prepends a [watchdog] block to the next prompt), the per-session and
 * per-turn cost ceilings (priced with POST /pricing/set), turns refused while halted (no frames,
 * the message waits), GET /guardrails, POST /guardrails/reset with its 400/409 rules and row,
 * and the halted state across restarts under the current configuration.
 */
import { expect, test } from "bun:test";
import { daemonScope } from "../../support/daemon-scope.ts";
import { postJson, waitFor } from "../../support/daemon.ts";
import { call as scriptedCall, writeScript } from "../../support/scripted.ts";
import { type Collector, type Frame, collect } from "../../support/sse-client.ts";

const scope = daemonScope();

/** One model call; `tokens` prompt tokens at $1 per million (see `price`). */
const usage = (tokens: number) => ({
  usageMetadata: { promptTokenCount: tokens, candidatesTokenCount: 0, totalTokenCount: tokens },
});
const say = (text: string, tokens = 0) => ({
  request: {},
  responses: [{ content: { role: "model", parts: [{ text }] }, turnComplete: true, ...usage(tokens) }],
});
const call = (name: string, args: Record<string, unknown>, tokens = 0) => scriptedCall(name, args, usage(tokens));
const MILLION = 1_000_000;

async function start(options: { script: string; args?: string[]; sessionDb?: string }) {
  const daemon = await scope.start({
    args: [
      "--model=scripted",
      `--script=${options.script}`,
      "--permission-mode=yolo",
      "--auto-continue=false",
      ...(options.args ?? []),
    ],
    ...(options.sessionDb ? { sessionDb: options.sessionDb } : {}),
  });
  const events = collect(`${daemon.baseUrl}/sessions/default/events`);
  scope.defer(events, (stream) => stream.close());
  await events.waitFor((frame) => frame.event === "usage-update");
  const base = `${daemon.baseUrl}/sessions/default`;
  return { daemon, events, base };
}

const price = (base: string) =>
  postJson(`${base}/pricing/set`, { model: "scripted", input_usd_per_mtok: 1, output_usd_per_mtok: 1 });
const guardrails = async (base: string) =>
  (await (await fetch(`${base}/guardrails`)).json()) as {
    watchdog: Record<string, unknown>;
    cost_ceiling: Record<string, unknown>;
    halted: boolean;
  };
const rows = (events: Collector) =>
  events.frames
    .filter((frame) => frame.event === "agent")
    .map(
      (frame) =>
        frame.data.event as {
          Author: string;
          CustomMetadata: Record<string, unknown> | null;
          Content: { parts: Array<{ text?: string }> } | null;
        },
    );
/** Turns a halted session refused so far (spar_turns_refused_total, every guardrail). */
async function refusedTurns(base: string): Promise<number> {
  const text = await (await fetch(`${new URL(base).origin}/metrics`)).text();
  return [...text.matchAll(/^spar_turns_refused_total\{[^}]*\} (\d+)/gm)].reduce(
    (sum, [, value]) => sum + Number(value),
    0,
  );
}

/** Wait until the session refused more than `before` turns: the scheduler looked at the queue and started nothing. */
async function refusedAfter(base: string, before: number): Promise<void> {
  await waitFor(async () => ((await refusedTurns(base)) > before ? true : undefined), 10_000, "the turn refused");
}

const after = (events: Collector, index: number) => events.frames.slice(index).map((frame) => frame.event);
/** The frame names after `index`, read once the inject's inbox frame has arrived (it can trail the HTTP answers). */
async function afterInbox(events: Collector, index: number): Promise<string[]> {
  await events.waitFor((frame) => frame.event === "inbox", 10_000, index);
  return after(events, index);
}
const turnEnd = (frame: Frame) => frame.event === "turn-complete" || frame.event === "turn-error";

test("watchdog enforce: a critical loop cuts the turn (trip frame, then canceled), halts, refuses turns; reset drains the inbox", async () => {
  const loop = Array.from({ length: 5 }, () => call("lookup", { q: "same" }));
  const { events, base } = await start({ script: writeScript([...loop, say("unstuck")]) });
  await postJson(`${base}/inject`, { message: "find it" });
  const trip = await events.waitFor((frame) => frame.event === "guardrail-trip");
  expect(trip.data).toMatchObject({ guardrail: "watchdog", halted_turn: true });
  expect(String(trip.data.reason)).toContain("/guardrails/reset");
  const end = await events.waitFor(turnEnd);
  expect(end.data).toMatchObject({ kind: "canceled", retryable: false });
  expect(events.frames.indexOf(end)).toBe(events.frames.indexOf(trip) + 1);
  const tripRow = rows(events).find((row) => row.Author === "agent/guardrail-trip");
  expect(tripRow?.CustomMetadata).toMatchObject({ source: "agent", guardrail: "watchdog", halted: true });
  expect(
    rows(events)
      .filter((row) => row.Author === "agent/watchdog")
      .map((row) => row.CustomMetadata?.severity),
  ).toEqual(["warning"]);
  const info = await guardrails(base);
  expect(info).toMatchObject({ halted: true, watchdog: { mode: "enforce", tripped: true } });

  const mark = events.frames.length;
  const refusedBefore = await refusedTurns(base);
  const refused = await postJson(`${base}/inject`, { message: "try again" });
  expect(await refused.json()).toMatchObject({ injected: true, woke: false, halted: { guardrail: "watchdog" } });
  await refusedAfter(base, refusedBefore);
  expect(await afterInbox(events, mark)).toEqual(["inbox"]);
  expect(((await (await fetch(`${base}/status`)).json()) as { turn_in_flight: boolean }).turn_in_flight).toBe(false);

  expect((await postJson(`${base}/guardrails/reset`, { guardrail: "bogus" })).status).toBe(400);
  expect((await postJson(`${base}/guardrails/reset`, { guardrail: "watchdog", additional_budget_usd: 1 })).status).toBe(
    400,
  );
  expect((await postJson(`${base}/guardrails/reset`, { additional_budget_usd: -1 })).status).toBe(400);
  expect((await guardrails(base)).halted).toBe(true);
  const reset = await postJson(`${base}/guardrails/reset`, { guardrail: "watchdog", caller: "mallory" });
  expect(reset.status).toBe(200);
  expect(await reset.json()).toMatchObject({ reset: ["watchdog"], budget_added_usd: 0, guardrails: { halted: false } });
  const done = await events.waitFor(turnEnd, 10_000, mark);
  expect(done.event).toBe("turn-complete");
  const resetRow = rows(events).find((row) => row.Author === "attach/guardrail-reset");
  expect(resetRow?.CustomMetadata).toMatchObject({ source: "operator", reset: ["watchdog"] });
  expect(resetRow?.CustomMetadata?.caller).toBeUndefined();
}, 30_000);

test("watchdog feedback: a warning is recorded and the next prompt starts with a [watchdog] block; nothing halts", async () => {
  const { events, base } = await start({
    script: writeScript([...Array.from({ length: 3 }, () => call("lookup", { q: "x" })), say("ok"), say("next")]),
    args: ["--watchdog=feedback"],
  });
  await postJson(`${base}/inject`, { message: "first" });
  await events.waitFor((frame) => frame.event === "turn-complete");
  expect(events.frames.some((frame) => frame.event === "guardrail-trip")).toBe(false);
  const mark = events.frames.length;
  await postJson(`${base}/inject`, { message: "second" });
  await events.waitFor((frame) => frame.event === "turn-complete", 10_000, mark);
  const prompts = rows(events)
    .filter((row) => row.Author === "user")
    .map((row) => row.Content?.parts[0]?.text ?? "");
  expect(prompts[0]).toBe("first");
  expect(prompts[1]?.startsWith("[watchdog]\n- warning: the agent issued the same lookup call 3 times in a row")).toBe(
    true,
  );
  expect(prompts[1]?.endsWith("second")).toBe(true);
  expect((await guardrails(base)).halted).toBe(false);
}, 30_000);

test("per-session ceiling: reaching it on a final answer trips without cutting; halted; 409 until enough budget; budget drains the inbox", async () => {
  const { events, base } = await start({
    script: writeScript([say("one", MILLION), say("two", MILLION), say("three", 0)]),
    args: ["--max-session-usd=1.5"],
  });
  expect((await price(base)).status).toBe(204);
  await postJson(`${base}/inject`, { message: "a" });
  await events.waitFor((frame) => frame.event === "turn-complete");
  let mark = events.frames.length;
  await postJson(`${base}/inject`, { message: "b" });
  const trip = await events.waitFor((frame) => frame.event === "guardrail-trip", 10_000, mark);
  expect(trip.data).toMatchObject({ guardrail: "cost_ceiling", halted_turn: false });
  expect((await events.waitFor(turnEnd, 10_000, mark)).event).toBe("turn-complete");
  expect(await guardrails(base)).toMatchObject({
    halted: true,
    cost_ceiling: { tripped: true, would_retrip: true, session_cost_usd: 2, max_session_usd: 1.5 },
  });

  mark = events.frames.length;
  const refusedBefore = await refusedTurns(base);
  await postJson(`${base}/inject`, { message: "c" });
  for (const body of [undefined, { additional_budget_usd: 0.2 }]) {
    const conflict = await postJson(`${base}/guardrails/reset`, body);
    expect(conflict.status).toBe(409);
    expect(await conflict.json()).toMatchObject({
      error: expect.stringContaining("additional_budget_usd"),
      reset: [],
      guardrails: { halted: true },
    });
  }
  await refusedAfter(base, refusedBefore);
  expect(await afterInbox(events, mark)).toEqual(["inbox"]);
  const reset = await postJson(`${base}/guardrails/reset`, { guardrail: "cost_ceiling", additional_budget_usd: 1 });
  expect(reset.status).toBe(200);
  expect(await reset.json()).toMatchObject({
    reset: ["cost_ceiling"],
    budget_added_usd: 1,
    guardrails: { halted: false, cost_ceiling: { max_session_usd: 2.5, would_retrip: false } },
  });
  expect((await events.waitFor(turnEnd, 10_000, mark)).event).toBe("turn-complete");
}, 30_000);

test("per-turn ceiling: a trip mid-turn cuts only that turn; a clean turn breaks the streak; three in a row halt", async () => {
  // A cut turn consumes only its first call of the script.
  const pricey = (text: string) => call("lookup", { q: text }, MILLION);
  const script = writeScript([pricey("t1"), say("clean"), pricey("t3"), pricey("t4"), pricey("t5"), say("never")]);
  const { events, base } = await start({ script, args: ["--max-turn-usd=0.5"] });
  await price(base);
  const turn = async (message: string) => {
    const mark = events.frames.length;
    await postJson(`${base}/inject`, { message });
    const end = await events.waitFor(turnEnd, 10_000, mark);
    return { trip: events.frames.slice(mark).find((frame) => frame.event === "guardrail-trip"), end };
  };
  const first = await turn("1");
  expect(first.trip?.data).toMatchObject({ guardrail: "cost_ceiling", halted_turn: true });
  expect(first.end.data.kind).toBe("canceled");
  expect((await guardrails(base)).cost_ceiling.consecutive_turn_trips).toBe(1);
  expect((await turn("2")).end.event).toBe("turn-complete");
  expect(await guardrails(base)).toMatchObject({ halted: false, cost_ceiling: { consecutive_turn_trips: 0 } });
  await turn("3");
  await turn("4");
  const fifth = await turn("5");
  expect(String(fifth.trip?.data.reason)).toContain("3 consecutive turns");
  expect(await guardrails(base)).toMatchObject({
    halted: true,
    cost_ceiling: { tripped: true, consecutive_turn_trips: 3 },
  });
  // The next call of the script would have been the turn after a cut; nothing ran it.
  const mark = events.frames.length;
  const refusedBefore = await refusedTurns(base);
  await postJson(`${base}/inject`, { message: "6" });
  await refusedAfter(base, refusedBefore);
  expect(await afterInbox(events, mark)).toEqual(["inbox"]);
}, 40_000);

test("a session halted on spend stays halted across restart; a raised or removed ceiling does not resurrect it; a reset survives", async () => {
  const script = writeScript([say("one", 2 * MILLION), say("after restart"), say("again")]);
  const first = await start({ script, args: ["--max-session-usd=1"] });
  await price(first.base);
  await postJson(`${first.base}/inject`, { message: "spend" });
  await first.events.waitFor((frame) => frame.event === "guardrail-trip");
  await first.events.waitFor(turnEnd);
  await postJson(`${first.base}/inject`, { message: "queued while halted" });
  await first.daemon.kill9();

  const sessionDb = first.daemon.sessionDb;
  const same = await start({ script, args: ["--max-session-usd=1"], sessionDb });
  expect(await guardrails(same.base)).toMatchObject({
    halted: true,
    cost_ceiling: { tripped: true, session_cost_usd: 2 },
  });
  // The message queued before the kill is drained at boot and refused: the session stays halted.
  await refusedAfter(same.base, 0);
  expect(same.events.frames.some((frame) => frame.event === "turn-complete")).toBe(false);
  await same.daemon.sigterm();

  const raised = await start({ script, args: ["--max-session-usd=5"], sessionDb });
  expect(await guardrails(raised.base)).toMatchObject({
    halted: false,
    cost_ceiling: { tripped: false, max_session_usd: 5 },
  });
  // The message queued while halted drains once nothing holds the session (its answer row
  // replays even when the turn ended before this stream attached).
  await waitFor(
    () => (rows(raised.events).filter((row) => row.Author === "spar").length >= 2 ? true : undefined),
    10_000,
    "the drained answer",
  );
  expect(
    rows(raised.events)
      .map((row) => row.Author)
      .slice(-2),
  ).toEqual(["user", "spar"]);
  await raised.daemon.sigterm();

  const lowered = await start({ script, args: ["--max-session-usd=1"], sessionDb });
  expect((await guardrails(lowered.base)).halted).toBe(true);
  expect((await postJson(`${lowered.base}/guardrails/reset`, { additional_budget_usd: 4 })).status).toBe(200);
  await lowered.daemon.sigterm();
  const afterReset = await start({ script, args: ["--max-session-usd=1"], sessionDb });
  expect(await guardrails(afterReset.base)).toMatchObject({
    halted: false,
    cost_ceiling: { max_session_usd: 5, budget_added_usd: 4 },
  });
  const none = await (async () => {
    await afterReset.daemon.sigterm();
    return start({ script, sessionDb });
  })();
  expect(await guardrails(none.base)).toMatchObject({
    halted: false,
    cost_ceiling: { max_session_usd: 0, budget_added_usd: 0 },
  });
}, 60_000);

test("a watchdog halt survives restart under enforce and is not resurrected under warn", async () => {
  const script = writeScript(Array.from({ length: 5 }, () => call("lookup", { q: "same" })));
  const first = await start({ script });
  await postJson(`${first.base}/inject`, { message: "loop" });
  await first.events.waitFor((frame) => frame.event === "guardrail-trip");
  await first.events.waitFor(turnEnd);
  await first.daemon.kill9();
  const enforce = await start({ script, sessionDb: first.daemon.sessionDb });
  expect(await guardrails(enforce.base)).toMatchObject({ halted: true, watchdog: { tripped: true } });
  await enforce.daemon.sigterm();
  const warn = await start({ script, args: ["--watchdog=warn"], sessionDb: first.daemon.sessionDb });
  expect(await guardrails(warn.base)).toMatchObject({ halted: false, watchdog: { mode: "warn", tripped: false } });
  await waitFor(
    async () => ((await fetch(`${warn.daemon.baseUrl}/healthz`)).status === 200 ? true : undefined),
    5000,
    "healthz",
  );
}, 40_000);

test("readiness: a guardrail-halted session counts neither as a failure nor as clearing one", async () => {
  const failing = { request: {}, responses: [{ error: { status: "401", message: "bad key" } }] };
  const loop = Array.from({ length: 5 }, () => call("lookup", { q: "same" }));
  // The session first schedules a wake an hour away: only a wake loop counts for readiness (D363).
  const schedule = call("schedule_next_turn", { delay_seconds: 3600, reason: "check again" });
  const { daemon, events, base } = await start({ script: writeScript([schedule, failing, failing, failing, ...loop]) });
  for (let i = 0; i < 4; i++) {
    const mark = events.frames.length;
    await postJson(`${base}/inject`, { message: `try ${i}` });
    await events.waitFor(turnEnd, 10_000, mark);
  }
  const health = async () => (await fetch(`${daemon.baseUrl}/healthz`)).status;
  expect(await health()).toBe(503);
  await postJson(`${base}/inject`, { message: "loop" });
  await events.waitFor((frame) => frame.event === "guardrail-trip");
  await waitFor(async () => ((await guardrails(base)).halted ? true : undefined), 5000, "halt");
  // The only live session is halted: nothing left to judge, so the aggregate is ready again.
  expect(await health()).toBe(200);
}, 30_000);
