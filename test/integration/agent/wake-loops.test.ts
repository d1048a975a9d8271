/**
 * Wake loops through the real daemon (D360-D363), one scripted daemon shared by the file, its
 * model calls consumed in order: the loop-control tools in /tools and never in a subagent's list,
 * schedule_next_turn ending the turn and waking the session (a `wake` frame, /status.next_wake_at,
 * the next turn reading the wake's prompt), refused arguments, a later schedule replacing an
 * earlier one and an inject leaving it standing, and the return_result and report_alert rows.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Daemon, postJson, startDaemon, tempDir } from "../../support/daemon.ts";
import { type Collector, collect } from "../../support/sse-client.ts";
import { call, say, toolResults, writeScript } from "../../support/scripted.ts";
import { loopRows, promptTexts, sessionStatus } from "../../support/wake-loop.ts";

const ZERO_TIME = "0001-01-01T00:00:00Z";
const SCRIPT = [
  call("schedule_next_turn", { delay_seconds: 2, reason: "poll the queue" }), // 0: ends the turn
  say("polled"), // 1: the woken turn
  call("schedule_next_turn", { at: "2000-01-01T00:00:00Z" }), // 2: refused (past)
  call("schedule_next_turn", { delay_seconds: 5, at: "2099-01-01T00:00:00Z" }), // 3: refused (both)
  say("gave up"), // 4
  call("report_alert", { severity: "warning", summary: "disk 91%", detail: "/var" }), // 5: the turn goes on
  call("return_result", { result: "queue empty" }), // 6: ends the turn
  call("schedule_next_turn", { delay_seconds: 3600, reason: "first" }), // 7
  say("hi"), // 8: an inject's turn
  call("schedule_next_turn", { delay_seconds: 7200, reason: "second" }), // 9: replaces the first
];

let daemon: Daemon;
let events: Collector;
let base: string;

beforeAll(async () => {
  const cwd = tempDir();
  mkdirSync(join(cwd, ".agents"));
  const roster = [{ name: "helper", description: "Does anything.", tools: ["*"], parent_tool: false }];
  writeFileSync(join(cwd, ".agents", "config.json"), JSON.stringify({ agent: { subagents: roster } }));
  daemon = await startDaemon({
    cwd,
    args: ["--model=scripted", `--script=${writeScript(SCRIPT)}`, "--auto-continue=false"],
  });
  base = `${daemon.baseUrl}/sessions/default`;
  events = collect(`${base}/events`);
  await events.waitFor((frame) => frame.event === "usage-update");
});

afterAll(async () => {
  events.close();
  await daemon.sigterm();
});

async function turn(message: string): Promise<number> {
  const from = events.frames.length;
  expect((await postJson(`${base}/inject`, { message })).status).toBe(200);
  await events.waitFor((frame) => frame.event === "turn-complete", 10_000, from);
  return from;
}

const LOOP_TOOLS = ["report_alert", "return_result", "schedule_next_turn"];

test("/tools lists the loop-control tools; a subagent granted every tool is never listed them", async () => {
  const tools = (await (await fetch(`${base}/tools`)).json()) as { tools: Array<{ name: string; source: string }> };
  expect(tools.tools.filter((tool) => LOOP_TOOLS.includes(tool.name)).map((tool) => tool.source)).toEqual([
    "builtin",
    "builtin",
    "builtin",
  ]);
  const roster = (await (await fetch(`${base}/subagents`)).json()) as {
    subagents: Array<{ tools: Array<{ name: string }> }>;
  };
  const granted = roster.subagents[0]?.tools.map((tool) => tool.name) ?? [];
  expect(granted).toContain("bash");
  expect(granted.filter((name) => LOOP_TOOLS.includes(name))).toEqual([]);
});

test("schedule_next_turn ends the turn, shows on /status, and wakes the session with its prompt", async () => {
  expect((await sessionStatus(base)).next_wake_at).toBe(ZERO_TIME);
  const from = await turn("start the loop");
  const answer = toolResults(events).at(-1);
  expect(answer).toMatchObject({ name: "schedule_next_turn", response: { scheduled: true } });
  const { id, at } = answer?.response as { id: string; at: string };
  expect(loopRows(events, "wake-scheduled").at(-1)?.metadata).toEqual({ id, at, reason: "poll the queue" });
  // The turn ended on the call: no second model call, and the session sleeps `idle` until `at`.
  const status = await sessionStatus(base);
  expect(status).toMatchObject({ state: "idle", next_wake_at: at });
  await events.waitFor((frame) => frame.event === "wake", 10_000, from);
  await events.waitFor(
    (frame) => frame.event === "turn-complete",
    10_000,
    events.frames.findIndex((frame, index) => index >= from && frame.event === "wake"),
  );
  // Not early (a timer may round by a few milliseconds).
  expect(Date.now() + 50).toBeGreaterThanOrEqual(Date.parse(at));
  expect(promptTexts(events).at(-1)).toContain(`[scheduled wake ${id}, due ${at}]: poll the queue`);
  expect(loopRows(events, "wake-fired").at(-1)?.metadata).toMatchObject({ id, at });
  expect((await sessionStatus(base)).next_wake_at).toBe(ZERO_TIME);
});

test("refused schedules: a past `at`, both `at` and `delay_seconds`; the turn goes on", async () => {
  const scheduled = loopRows(events, "wake-scheduled").length;
  await turn("schedule wrongly");
  const answers = toolResults(events).slice(-2);
  expect(answers[0]?.response.error).toContain("in the past");
  expect(answers[1]?.response.error).toContain("exactly one of");
  expect(loopRows(events, "wake-scheduled").length).toBe(scheduled);
  expect((await sessionStatus(base)).next_wake_at).toBe(ZERO_TIME);
});

test("report_alert records an alert and the turn goes on; return_result records the result and ends it", async () => {
  await turn("check the disk");
  expect(loopRows(events, "loop-alert").at(-1)?.metadata).toEqual({
    severity: "warning",
    summary: "disk 91%",
    detail: "/var",
  });
  expect(loopRows(events, "loop-result").at(-1)?.metadata).toEqual({ result: "queue empty" });
  expect(
    toolResults(events)
      .slice(-2)
      .map((result) => result.response.recorded),
  ).toEqual([true, true]);
});

test("an inject leaves a pending wake standing; a later schedule replaces it", async () => {
  await turn("sleep an hour");
  const first = (toolResults(events).at(-1)?.response as { at: string }).at;
  expect((await sessionStatus(base)).next_wake_at).toBe(first);
  await turn("hello");
  expect((await sessionStatus(base)).next_wake_at).toBe(first);
  await turn("sleep two hours");
  const second = (toolResults(events).at(-1)?.response as { at: string }).at;
  expect(Date.parse(second)).toBeGreaterThan(Date.parse(first));
  expect((await sessionStatus(base)).next_wake_at).toBe(second);
});
