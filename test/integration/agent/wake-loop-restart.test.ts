/**
 * Scheduled wakes across kill -9 (D360), one store shared by four daemon runs: a wake pending at
 * the kill fires exactly once in the next run; a wake that fell due while the daemon was down
 * fires once at boot; a run after both fires neither again.
 */
import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import { type Daemon, postJson, startDaemon, tempDir, waitFor } from "../../support/daemon.ts";
import { type Collector, collect } from "../../support/sse-client.ts";
import { call, say, toolResults, writeScript } from "../../support/scripted.ts";
import { loopRows, promptTexts, sessionStatus } from "../../support/wake-loop.ts";

const sessionDb = join(tempDir(), "sessions.db");
let running: { daemon: Daemon; events: Collector } | undefined;

afterAll(async () => {
  running?.events.close();
  if (running && running.daemon.process.exitCode === null) await running.daemon.sigterm();
});

async function boot(lines: readonly unknown[]): Promise<{ daemon: Daemon; events: Collector; base: string }> {
  const daemon = await startDaemon({
    sessionDb,
    args: ["--model=scripted", `--script=${writeScript(lines)}`, "--auto-continue=false"],
  });
  const base = `${daemon.baseUrl}/sessions/default`;
  const events = collect(`${base}/events`);
  running = { daemon, events };
  await events.waitFor((frame) => frame.event === "usage-update");
  return { daemon, events, base };
}

async function kill9(): Promise<void> {
  running?.events.close();
  await running?.daemon.kill9();
  running = undefined;
}

/** Inject and wait for the schedule's answer: the row is committed when it arrives. */
async function schedule(events: Collector, base: string): Promise<{ id: string; at: string }> {
  const from = events.frames.length;
  await postJson(`${base}/inject`, { message: "sleep a little" });
  await events.waitFor((frame) => frame.event === "turn-complete", 10_000, from);
  return toolResults(events).at(-1)?.response as { id: string; at: string };
}

const mentions = (texts: readonly string[], id: string) => texts.filter((text) => text.includes(id)).length;

test("a wake pending at kill -9 fires once after the restart; one due while down fires once at boot", async () => {
  // Run 1: schedule 3 s ahead, then kill -9 before it is due.
  let run = await boot([call("schedule_next_turn", { delay_seconds: 3, reason: "pending" })]);
  const pending = await schedule(run.events, run.base);
  await kill9();
  expect(Date.now()).toBeLessThan(Date.parse(pending.at));

  // Run 2: the boot re-arms it (/status shows it until it fires), then it fires once.
  run = await boot([say("woke after the restart"), call("schedule_next_turn", { delay_seconds: 2, reason: "due" })]);
  const status = await sessionStatus(run.base);
  if (Date.now() < Date.parse(pending.at) - 200) expect(status.next_wake_at).toBe(pending.at);
  await run.events.waitFor((frame) => frame.event === "wake", 10_000);
  await run.events.waitFor((frame) => frame.event === "turn-complete", 10_000);
  expect(mentions(promptTexts(run.events), pending.id)).toBe(1);
  // Schedule again and kill -9 at once; wait (on the clock) until it fell due while down.
  const due = await schedule(run.events, run.base);
  await kill9();
  await waitFor(() => (Date.now() > Date.parse(due.at) + 100 ? true : undefined), 10_000, "the wake to fall due");

  // Run 3: it fires at boot, once.
  run = await boot([say("woke at boot")]);
  await run.events.waitFor((frame) => frame.event === "turn-complete", 10_000);
  expect(mentions(promptTexts(run.events), due.id)).toBe(1);
  expect(loopRows(run.events, "wake-fired").map((row) => row.metadata.id)).toEqual([pending.id, due.id]);
  await kill9();

  // Run 4: nothing is pending; a turn of its own reads no wake prompt, and neither wake fired twice.
  run = await boot([say("just me")]);
  expect((await sessionStatus(run.base)).next_wake_at).toBe("0001-01-01T00:00:00Z");
  const from = run.events.frames.length;
  await postJson(`${run.base}/inject`, { message: "anyone?" });
  await run.events.waitFor((frame) => frame.event === "turn-complete", 10_000, from);
  const texts = promptTexts(run.events);
  expect(texts.at(-1)).not.toContain("scheduled wake");
  expect([mentions(texts, pending.id), mentions(texts, due.id)]).toEqual([1, 1]);
  expect(loopRows(run.events, "wake-fired")).toHaveLength(2);
  expect(run.events.frames.some((frame) => frame.event === "turn-error")).toBe(false);
});
