/**
 * Automatic and manual compaction (D155) in a real daemon, read with the `eventsource` client:
 * a conversation past 80% of the model's context window is summarized into one durable row, so
 * every request stays under the window; a restarted daemon rebuilds exactly the conversation the
 * live one had; a failed summary is recorded, backs off, and a conversation past the window is
 * compacted mechanically; POST /slash/compact and GET /context; bad input.
 */
import { expect, test } from "bun:test";
import { daemonScope } from "../../support/daemon-scope.ts";
import { postJson, waitFor } from "../../support/daemon.ts";
import { call, failWith, say, writeScript } from "../../support/scripted.ts";
import { type Collector, type Frame, collect } from "../../support/sse-client.ts";

const scope = daemonScope();

async function start(args: string[], sessionDb?: string) {
  const daemon = await scope.start({ args, ...(sessionDb ? { sessionDb } : {}) });
  const events = collect(`${daemon.baseUrl}/sessions/default/events`);
  scope.defer(events, (stream) => stream.close());
  await events.waitFor((frame) => frame.event === "capabilities");
  return { daemon, events, base: `${daemon.baseUrl}/sessions/default` };
}

type Row = { Author: string; CustomMetadata: Record<string, unknown> | null };
const rows = (events: Collector): Row[] =>
  events.frames.filter((frame) => frame.event === "agent").map((frame) => frame.data.event as Row);
const byAuthor = (events: Collector, author: string) => rows(events).filter((row) => row.Author === author);
const turnEnd = (frame: Frame) => frame.event === "turn-complete" || frame.event === "turn-error";
const getJson = async (url: string) => (await (await fetch(url)).json()) as Record<string, unknown>;
type PerTurn = Array<{ turn: number; ts: string; input_tokens: number }>;

/** Inject, wait for the turn's end, then for the session to settle (a compaction runs after the terminal frame). */
async function turn(session: { events: Collector; base: string }, message: string): Promise<void> {
  const mark = session.events.frames.length;
  expect((await postJson(`${session.base}/inject`, { message })).status).toBe(200);
  await session.events.waitFor(turnEnd, 10_000, mark);
  await waitFor(
    async () => {
      const status = await getJson(`${session.base}/status`);
      return status.turn_in_flight === false && status.compacting === undefined ? true : undefined;
    },
    10_000,
    "the session to settle",
  );
  // The compaction's row is committed before the session settles; its frame may still be on the way.
  const { compactions } = await getJson(`${session.base}/context`);
  await waitFor(
    () => (byAuthor(session.events, "agent/compaction").length >= (compactions as number) ? true : undefined),
    10_000,
    "the stream to deliver every compaction row",
  );
}

const prompts = Array.from(
  { length: 20 },
  (_, index) => `step ${index + 1}: ${"check the deployment and report what changed ".repeat(2)}`,
);
const WINDOW = 400;

test("past 80% of the window the older turns become one summary row; requests stay under the window; a restart rebuilds the same conversation", async () => {
  const args = ["--model=echo", `--model-context-window=${WINDOW}`];
  const first = await start(args);
  for (const prompt of prompts) await turn(first, prompt);
  const compactions = byAuthor(first.events, "agent/compaction");
  expect(compactions.length).toBeGreaterThanOrEqual(3);
  expect(compactions[0]?.CustomMetadata).toMatchObject({ event: "compaction", source: "agent", model: "echo" });
  expect(compactions[0]?.CustomMetadata?.summary).toContain("Summarize the conversation");
  const perTurn = (await getJson(`${first.base}/usage`)).per_turn as PerTurn;
  expect(perTurn.map((record) => record.turn)).toEqual(prompts.map((_, index) => index + 1));
  // Echo counts every message of the request: without compaction turn 20 would send ~1,000 tokens.
  expect(Math.max(...perTurn.map((record) => record.input_tokens))).toBeLessThanOrEqual(WINDOW);
  expect(perTurn.at(-1)?.input_tokens).toBeLessThan(
    perTurn.slice(0, 8).reduce((sum, record) => sum + record.input_tokens, 0),
  );
  const context = await getJson(`${first.base}/context`);
  expect(context.compactions).toBe(compactions.length);
  expect(context.total_chars_summarized as number).toBeGreaterThan(context.chars_after_compaction as number);

  await first.daemon.kill9();
  const restarted = await start(args, first.daemon.sessionDb);
  expect(await getJson(`${restarted.base}/context`)).toEqual(context);
  await turn(restarted, "final question");
  const afterRestart = ((await getJson(`${restarted.base}/usage`)).per_turn as PerTurn).at(-1);

  // The same prompts on a daemon that never restarted send the same final request.
  const control = await start(args);
  for (const prompt of prompts) await turn(control, prompt);
  await turn(control, "final question");
  const live = ((await getJson(`${control.base}/usage`)).per_turn as PerTurn).at(-1);
  expect(afterRestart).toEqual({ ...live, ts: afterRestart?.ts } as PerTurn[number]);
  expect(afterRestart?.turn).toBe(21);
}, 60_000);

test("a failed summary is recorded and backs off; past the whole window the conversation is compacted mechanically; /slash/compact runs between turns", async () => {
  const long = (tag: string) => `${tag} ${"x".repeat(215)}`;
  // Model calls in order: two turns, the failing summary, a short turn, the manual summary, a slow turn, a failing manual summary.
  const script = writeScript([
    say(long("a1")),
    say(long("a2")),
    failWith("503", "summarizer down"),
    say("ok"),
    say("the manual summary"),
    {
      request: {},
      responses: [{ content: { role: "model", parts: [{ text: "slow" }] }, turnComplete: true, delayMs: 1500 }],
    },
    failWith("503", "summarizer down again"),
  ]);
  const session = await start(["--model=scripted", `--script=${script}`, "--model-context-window=200"]);
  await turn(session, long("u1"));
  await turn(session, long("u2"));
  const reductions = byAuthor(session.events, "agent/context-reduction").map((row) => row.CustomMetadata);
  expect(reductions).toEqual([
    {
      event: "context-reduction-failed",
      source: "agent",
      operation: "compaction",
      reason: expect.stringContaining("summarizer down"),
      consecutive_failures: 1,
      cooldown_turns: 1,
    },
    {
      event: "context-reduction-degraded",
      source: "agent",
      operation: "mechanical-compaction",
      detail: expect.any(String),
    },
  ]);
  const mechanical = byAuthor(session.events, "agent/compaction")[0]?.CustomMetadata ?? {};
  expect(mechanical).toMatchObject({ mechanical: true, messages_summarized: 2, messages_kept: 2 });
  expect(mechanical.summary).toStartWith("2 earlier messages were removed without a model summary.");
  expect((mechanical.summary as string).length).toBeLessThanOrEqual(200);
  expect(mechanical.model).toBeUndefined();

  // In the cooldown the next turn makes no summary call: the script's "ok" answers the turn.
  await turn(session, "hi");
  expect(rows(session.events).at(-1)).toMatchObject({ Author: "spar" });

  // Bad input changes nothing.
  const bad = await postJson(`${session.base}/slash/compact`, { focus: 5 });
  expect(bad.status).toBe(400);
  expect(((await bad.json()) as { error: string }).error).toContain("focus");
  const malformed = await fetch(`${session.base}/slash/compact`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: "{",
  });
  expect(malformed.status).toBe(400);
  expect((await getJson(`${session.base}/context`)).compactions).toBe(1);

  const manual = await postJson(`${session.base}/slash/compact`, { focus: "the deployment" });
  expect(manual.status).toBe(200);
  const result = (await manual.json()) as Record<string, unknown>;
  expect(result).toMatchObject({ summary_text: "the manual summary" });
  expect(typeof result.summary_event_id).toBe("string");
  expect(typeof result.duration_ms).toBe("number");
  const manualRow = await session.events.waitFor(
    (frame) => frame.event === "agent" && (frame.data.event as Row & { ID: string }).ID === result.summary_event_id,
  );
  expect((manualRow.data.event as Row).CustomMetadata).toMatchObject({
    manual: true,
    summary: "the manual summary",
    messages_kept: 2,
  });
  expect(await getJson(`${session.base}/context`)).toMatchObject({ compactions: 2, checkpoints: 0 });

  // Nothing left to summarize: skipped, no row.
  expect(await (await postJson(`${session.base}/slash/compact`, {})).json()).toMatchObject({ skipped: true });

  // While a turn runs: 409, and the turn is unaffected.
  const mark = session.events.frames.length;
  await postJson(`${session.base}/inject`, { message: "slow one" });
  await session.events.waitFor(
    (frame) => frame.event === "status-update" && frame.data.turn_state === "streaming",
    10_000,
    mark,
  );
  const busy = await postJson(`${session.base}/slash/compact`, {});
  expect(busy.status).toBe(409);
  expect(((await busy.json()) as { error: string }).error).toContain("turn");
  expect((await session.events.waitFor(turnEnd, 10_000, mark)).event).toBe("turn-complete");
  expect((await getJson(`${session.base}/context`)).compactions).toBe(2);

  // A manual compaction the model fails: 500 naming the error (the spec's slash errors), no row (manual failures write none).
  await waitFor(
    async () => {
      const status = await getJson(`${session.base}/status`);
      return status.turn_in_flight === false && status.compacting === undefined ? true : undefined;
    },
    10_000,
    "the slow turn to settle",
  );
  const before = rows(session.events).length;
  const failed = await postJson(`${session.base}/slash/compact`, {});
  expect(failed.status).toBe(500);
  expect(((await failed.json()) as { error: string }).error).toContain("summarizer down again");
  // A barrier: the session's feed is ordered, so once the inbox frame of a message queued now
  // (wake:false: no turn, no row) arrives, any row the failed attempt wrote has arrived before it.
  const queued = (await (await postJson(`${session.base}/inject`, { message: "barrier", wake: false })).json()) as {
    prompt_id: string;
  };
  await session.events.waitFor((frame) => frame.event === "inbox" && frame.data.prompt_id === queued.prompt_id);
  expect(rows(session.events).length).toBe(before);
  expect((await getJson(`${session.base}/context`)).compactions).toBe(2);
}, 60_000);

test("SIGTERM during a summary call is not a failed compaction; the restarted daemon compacts on its next turn", async () => {
  const long = (tag: string) => `${tag} ${"y".repeat(215)}`;
  const slowSummary = {
    request: {},
    responses: [{ content: { role: "model", parts: [{ text: "never used" }] }, turnComplete: true, delayMs: 5000 }],
  };
  const first = await start([
    "--model=scripted",
    `--script=${writeScript([say(long("a1")), say(long("a2")), slowSummary])}`,
    "--model-context-window=200",
  ]);
  const mark = first.events.frames.length;
  await postJson(`${first.base}/inject`, { message: long("u1") });
  await first.events.waitFor(turnEnd, 10_000, mark);
  await waitFor(
    async () => {
      const status = await getJson(`${first.base}/status`);
      return status.turn_in_flight === false && status.compacting === undefined ? true : undefined;
    },
    10_000,
    "turn 1 to settle",
  );
  const mark2 = first.events.frames.length;
  await postJson(`${first.base}/inject`, { message: long("u2") });
  await first.events.waitFor(turnEnd, 10_000, mark2);
  // The summary call is now running (5 s): the turn is over, the session is compacting.
  expect(await getJson(`${first.base}/status`)).toMatchObject({
    state: "idle",
    turn_in_flight: false,
    compacting: true,
  });
  const stopping = performance.now();
  expect(await first.daemon.sigterm()).toBe(0);
  // The call is canceled at once (not waited for), and nothing is written to a closing store.
  expect(performance.now() - stopping).toBeLessThan(2500);
  expect(first.daemon.log()).not.toContain("ERROR");

  const second = await start(
    ["--model=scripted", `--script=${writeScript([say("ok"), say("the summary")])}`, "--model-context-window=200"],
    first.daemon.sessionDb,
  );
  await turn(second, "next");
  // One compaction, made by the restarted daemon's summary call; the canceled one left no row.
  expect(byAuthor(second.events, "agent/compaction")).toHaveLength(1);
  const compaction = byAuthor(second.events, "agent/compaction")[0]?.CustomMetadata;
  expect(compaction).toMatchObject({ summary: "the summary", model: "scripted" });
  expect(byAuthor(second.events, "agent/context-reduction")).toEqual([]);
}, 60_000);

test("an interrupt while the session compacts cancels the summary at once and interrupts no turn: nothing-in-flight, not parked, no failure row", async () => {
  const long = (tag: string) => `${tag} ${"y".repeat(215)}`;
  const slowSummary = {
    request: {},
    responses: [{ content: { role: "model", parts: [{ text: "never used" }] }, turnComplete: true, delayMs: 5000 }],
  };
  const session = await start([
    "--model=scripted",
    `--script=${writeScript([say(long("a1")), say(long("a2")), slowSummary, say("after")])}`,
    "--model-context-window=200",
  ]);
  await turn(session, long("u1"));
  const mark = session.events.frames.length;
  await postJson(`${session.base}/inject`, { message: long("u2") });
  await session.events.waitFor(turnEnd, 10_000, mark);
  expect((await getJson(`${session.base}/status`)).compacting).toBe(true);
  const asked = performance.now();
  const interrupt = await postJson(`${session.base}/interrupt`, {});
  expect(performance.now() - asked).toBeLessThan(1000);
  expect(interrupt.headers.get("x-interrupted")).toBe("nothing-in-flight");
  expect(await interrupt.json()).toMatchObject({ interrupted: false, paused: false });
  await waitFor(
    async () => ((await getJson(`${session.base}/status`)).compacting === undefined ? true : undefined),
    2000,
    "the compaction to stop",
  );
  expect((await getJson(`${session.base}/status`)).state).toBe("idle");
  expect(byAuthor(session.events, "agent/compaction")).toEqual([]);
  expect(byAuthor(session.events, "agent/context-reduction")).toEqual([]);
}, 30_000);

test("a tool result past the window cuts the turn (turn-cut, once) and an automatic checkpoint follows; a failed one is recorded as such", async () => {
  const script = writeScript([
    call("read_file", { path: "README.md" }), // the result alone is past the 500-token window
    say("the README, summarized"), // the automatic checkpoint's summary
    call("read_file", { path: "README.md" }),
    failWith("503", "summarizer down"), // the next automatic checkpoint fails
  ]);
  const session = await start([
    "--model=scripted",
    `--script=${script}`,
    "--model-context-window=500",
    "--tools-digest=passthrough",
  ]);
  const degraded = () =>
    byAuthor(session.events, "agent/context-reduction").filter(
      (row) => row.CustomMetadata?.event === "context-reduction-degraded",
    );
  const mark = session.events.frames.length;
  expect((await postJson(`${session.base}/inject`, { message: "read the README" })).status).toBe(200);
  const end = await session.events.waitFor(turnEnd, 10_000, mark);
  expect(end.event).toBe("turn-error");
  expect(end.data.kind).toBe("canceled");
  await waitFor(
    () => (byAuthor(session.events, "agent/checkpoint").length === 1 ? true : undefined),
    10_000,
    "the checkpoint",
  );
  expect(degraded().map((row) => row.CustomMetadata?.operation)).toEqual(["turn-cut"]);
  expect(byAuthor(session.events, "agent/checkpoint")[0]?.CustomMetadata?.summary).toBe("the README, summarized");
  expect((await getJson(`${session.base}/context`)).checkpoints).toBe(1);

  const again = session.events.frames.length;
  expect((await postJson(`${session.base}/inject`, { message: "read it again" })).status).toBe(200);
  await session.events.waitFor(turnEnd, 10_000, again);
  const failed = await waitFor(
    () =>
      byAuthor(session.events, "agent/context-reduction").find(
        (row) => row.CustomMetadata?.event === "context-reduction-failed",
      ),
    10_000,
    "the failed checkpoint row",
  );
  expect(failed.CustomMetadata).toMatchObject({ operation: "checkpoint", consecutive_failures: 1 });
  expect(failed.CustomMetadata?.reason).toContain("summarizer down");
  expect(degraded().map((row) => row.CustomMetadata?.operation)).toEqual(["turn-cut", "turn-cut"]);
});
