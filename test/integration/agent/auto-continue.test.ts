/**
 * Repair of a cut tool call and auto-continue in a real daemon with the scripted model: a turn
 * cut by kill -9 or SIGTERM is re-driven after the restart (the cut call repaired first), a
 * transient failure and an output-cap cut are re-driven, and every guard holds: deliberate
 * interrupts, auth failures and opt-out are never re-driven; at most 3 re-drives per sequence
 * (a human message resets it); the per-session cap; the freshness window; the crash-loop
 * breaker; another daemon's claim in the store. The harness and the kill -9 re-drive scenario live
 * in test/support/auto-continue-harness.ts and run on PostgreSQL too (agent-postgres.test.ts).
 */
import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import {
  authors,
  autoContinueHarness,
  continues,
  killAtToolCallRedrivesOnce,
  metric,
  rows,
  say,
  slow,
  turnEnd,
} from "../../support/auto-continue-harness.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { type Daemon, postJson, waitFor } from "../../support/daemon.ts";
import { call, failWith, writeScript } from "../../support/scripted.ts";

const scope = daemonScope();

const harness = autoContinueHarness(scope);
const { start, cutAtToolCall } = harness;

/**
 * The session's last turn has ended and its auto-continue offer was decided: the actor clears
 * `turn_in_flight` right after it offers (SessionActor.#run), so a turn that is never offered
 * (auth failure, opt-out) or refused by a guard has nothing left in flight.
 */
async function offerDecided(base: string): Promise<void> {
  await waitFor(
    async () =>
      ((await (await fetch(`${base}/status`)).json()) as { turn_in_flight: boolean }).turn_in_flight ? undefined : true,
    10_000,
    "the turn's end to be offered",
  );
}

/** A guard refused `count` offers in all (the refusal is counted before the offer returns). */
async function refusals(daemon: Daemon, count: number): Promise<void> {
  await waitFor(
    async () => ((await metric(daemon, "spar_auto_continue_refused")) >= count ? true : undefined),
    10_000,
    `${count} refused offer(s)`,
  );
}

test("kill -9 between a tool call and its result: the restart repairs the call and re-drives the turn once", async () => {
  await killAtToolCallRedrivesOnce(harness);
}, 40_000);

test("repair without auto-continue: the next human turn starts with the repaired result", async () => {
  const { sessionDb } = await cutAtToolCall(
    writeScript([call("write_file", { path: "/nonexistent/spar-test", content: "x" })]),
    ["--auto-continue=false"],
  );
  const second = await start(writeScript([say("answered")]), ["--auto-continue=false"], sessionDb);
  // A restart's offers are decided before the daemon listens (SessionHost.start): none was made.
  expect(await metric(second.daemon, "spar_auto_continue_redriven")).toBe(0);
  expect(continues(second.events)).toHaveLength(0);
  await postJson(`${second.base}/inject`, { message: "and now?" });
  await second.events.waitFor((frame) => frame.event === "turn-complete");
  const log = authors(second.events);
  expect(log.slice(log.indexOf("agent/repair"), log.indexOf("agent/repair") + 2)).toEqual(["agent/repair", "user"]);
}, 30_000);

test("SIGTERM mid-turn counts as cut by a restart; a deliberate interrupt is never re-driven", async () => {
  const first = await start(writeScript([slow("slow", 5000)]));
  await postJson(`${first.base}/inject`, { message: "work" });
  await first.events.waitFor((frame) => frame.event === "status-update" && frame.data.turn_state === "streaming");
  expect(await first.daemon.sigterm()).toBe(0);
  const second = await start(writeScript([say("after sigterm"), slow("slow again", 5000)]), [], first.daemon.sessionDb);
  // The re-drive starts at boot, maybe before this stream attached: wait on replayed rows.
  await waitFor(
    () => (rows(second.events).some((row) => row.Content?.parts[0]?.text === "after sigterm") ? true : undefined),
    10_000,
    "the re-driven answer",
  );
  expect(continues(second.events)).toHaveLength(1);

  // Mark before the inject: under load its streaming frame can arrive before the POST's answer.
  const mark = second.events.frames.length;
  await postJson(`${second.base}/inject`, { message: "more work" });
  await second.events.waitFor(
    (frame) => frame.event === "status-update" && frame.data.turn_state === "streaming",
    10_000,
    mark,
  );
  await postJson(`${second.base}/interrupt`, { hold: false });
  await second.daemon.kill9();
  const third = await start(writeScript([say("never")]), [], first.daemon.sessionDb);
  // A restart's offers are decided before the daemon listens (SessionHost.start): the count is final.
  expect(await metric(third.daemon, "spar_auto_continue_redriven")).toBe(0);
  await waitFor(
    () => (rows(third.events).some((row) => row.Content?.parts[0]?.text === "after sigterm") ? true : undefined),
    10_000,
    "the history replayed",
  );
  expect(continues(third.events)).toHaveLength(1);
}, 40_000);

test("transient failures are re-driven at most 3 times per sequence; a human message starts a new one", async () => {
  const script = writeScript([
    failWith("503", "upstream down"),
    failWith("UNAVAILABLE", "down"),
    failWith("429", "slow down"),
    failWith("503", "still down"),
    say("human turn"),
    failWith("503", "down again"),
    say("recovered"),
  ]);
  const { events, base, daemon } = await start(script);
  await postJson(`${base}/inject`, { message: "go" });
  await waitFor(
    () => (events.frames.filter((frame) => frame.event === "turn-error").length >= 4 ? true : undefined),
    10_000,
    "four failed turns",
  );
  // The fourth failure's offer is refused (3 re-drives per sequence): nothing more is armed.
  await refusals(daemon, 1);
  expect(events.frames.filter((frame) => frame.event === "turn-error").map((frame) => frame.data.kind)).toEqual([
    "transient_network",
    "transient_network",
    "rate_limited",
    "transient_network",
  ]);
  expect(
    continues(events).map((row) => row.Content?.parts[0]?.text?.includes("transient model-provider error")),
  ).toEqual([true, true, true]);
  expect(authors(events).filter((author) => author === "agent/turn-error")).toHaveLength(4);
  const mark = events.frames.length;
  await postJson(`${base}/inject`, { message: "human" });
  await events.waitFor((frame) => frame.event === "turn-complete", 10_000, mark);
  const mark2 = events.frames.length;
  await postJson(`${base}/inject`, { message: "again" });
  await events.waitFor((frame) => frame.event === "turn-complete", 10_000, mark2);
  expect(continues(events)).toHaveLength(4);
  expect(await metric(daemon, "spar_auto_continue_redriven")).toBe(4);
}, 40_000);

test("never re-driven: auth failures, malformed requests, or when opted out; the per-session cap holds", async () => {
  const auth = await start(writeScript([failWith("401", "bad key"), failWith("400", "malformed"), say("unused")]));
  for (const message of ["a", "b"]) {
    const mark = auth.events.frames.length;
    await postJson(`${auth.base}/inject`, { message });
    await auth.events.waitFor(turnEnd, 10_000, mark);
  }
  await offerDecided(auth.base);
  expect(continues(auth.events)).toHaveLength(0);
  expect(await metric(auth.daemon, "spar_auto_continue_redriven")).toBe(0);

  const off = await start(writeScript([failWith("503", "down"), say("unused")]), ["--auto-continue=false"]);
  await postJson(`${off.base}/inject`, { message: "go" });
  await off.events.waitFor(turnEnd);
  await offerDecided(off.base);
  expect(continues(off.events)).toHaveLength(0);
  expect(await metric(off.daemon, "spar_auto_continue_redriven")).toBe(0);

  const capped = await start(writeScript([failWith("503", "down"), failWith("503", "down"), say("unused")]), [
    "--auto-continue-max-per-session=1",
  ]);
  await postJson(`${capped.base}/inject`, { message: "go" });
  await waitFor(
    () => (capped.events.frames.filter((frame) => frame.event === "turn-error").length >= 2 ? true : undefined),
    10_000,
    "two failed turns",
  );
  // The second failure's offer is refused (the per-session cap): nothing more is armed.
  await refusals(capped.daemon, 1);
  expect(continues(capped.events)).toHaveLength(1);
}, 40_000);

test("an output-token-cap cut is continued", async () => {
  const { events, base } = await start(
    writeScript([say("the first half", { finishReason: "MAX_TOKENS" }), say("the second half")]),
  );
  await postJson(`${base}/inject`, { message: "long answer please" });
  await waitFor(
    () => (events.frames.filter((frame) => frame.event === "turn-complete").length >= 2 ? true : undefined),
    10_000,
    "two turns",
  );
  expect(continues(events)[0]?.Content?.parts[0]?.text).toContain("output-token limit");
}, 30_000);

test("guards at restart: the freshness window, the crash-loop breaker and another daemon's claim", async () => {
  const script = writeScript([call("write_file", { path: "/nonexistent/spar-test", content: "x" })]);
  const resume = writeScript([say("resumed")]);
  const stale = await cutAtToolCall(script);
  // Time under test: the interruption ages past the 1 s freshness window.
  await Bun.sleep(1200);
  const late = await start(resume, ["--auto-continue-freshness=1s"], stale.sessionDb);
  // A restart's offers are decided before the daemon listens (SessionHost.start): none was granted.
  expect(await metric(late.daemon, "spar_auto_continue_redriven")).toBe(0);
  expect(continues(late.events)).toHaveLength(0);

  // One unclean stop in the window opens a breaker set to 1.
  const looping = await cutAtToolCall(script);
  const broken = await start(resume, ["--auto-continue-crash-loop-boots=1"], looping.sessionDb);
  expect(await metric(broken.daemon, "spar_auto_continue_redriven")).toBe(0);
  expect(continues(broken.events)).toHaveLength(0);
  expect(broken.daemon.log()).toContain("crash-loop breaker open");

  // Another daemon claimed this interruption a moment ago: stand down.
  const claimed = await cutAtToolCall(script);
  const db = new Database(claimed.sessionDb);
  try {
    db.run(
      "INSERT INTO interruption_claims (app, sid, interruption, owner, expires_at) VALUES ('spar', 'default', ?, 'other-daemon', ?)",
      [claimed.interruption, new Date(Date.now() + 600_000).toISOString()],
    );
  } finally {
    db.close();
  }
  const standing = await start(resume, [], claimed.sessionDb);
  expect(await metric(standing.daemon, "spar_auto_continue_redriven")).toBe(0);
  expect(continues(standing.events)).toHaveLength(0);
  expect(standing.daemon.log()).toContain("another daemon holds the claim");
}, 60_000);

test("a continue turn waiting out its backoff: resume abandon drops it, a human message supersedes it; each leaves the queue as dequeued (withdrawn); inject while parked does not wake", async () => {
  const { events, base } = await start(
    writeScript([
      failWith("429", "slow down"),
      say("continued after abandon"),
      failWith("429", "again"),
      say("human answer"),
    ]),
    ["--auto-continue-backoff=1500ms"],
  );
  const queuedContinue = () =>
    events.waitFor(
      (frame) =>
        frame.event === "inbox" && frame.data.state === "queued" && !submitted.has(String(frame.data.prompt_id)),
    );
  const submitted = new Set<string>();
  const injectMessage = async (message: string) => {
    const answer = (await (await postJson(`${base}/inject`, { message })).json()) as {
      prompt_id: string;
      woke: boolean;
    };
    submitted.add(answer.prompt_id);
    return answer;
  };
  await injectMessage("first");
  await events.waitFor((frame) => frame.event === "turn-error");
  const announced = await queuedContinue();
  expect((await postJson(`${base}/pause`, {})).status).toBe(200);
  expect((await postJson(`${base}/resume`, { mode: "abandon" })).status).toBe(200);
  const withdrawn = await events.waitFor(
    (frame) =>
      frame.event === "inbox" && frame.data.state === "dequeued" && frame.data.prompt_id === announced.data.prompt_id,
  );
  expect(withdrawn.data.withdrawn).toBe(true);
  // Time under test: the withdrawn continue's 1.5 s backoff elapses and it still never runs.
  await Bun.sleep(2000);
  expect(continues(events)).toHaveLength(0);

  // Parked: the message waits and nothing woke.
  expect((await postJson(`${base}/pause`, {})).status).toBe(200);
  expect((await injectMessage("while parked")).woke).toBe(false);
  expect((await postJson(`${base}/resume`, { mode: "continue" })).status).toBe(200);
  // "while parked" runs the script's next line ("continued after abandon" text, as a plain answer).
  await events.waitFor((frame) => frame.event === "turn-complete");

  // The next failure arms a continue; a human message during its backoff supersedes it.
  await injectMessage("fails again");
  const second = await events.waitFor((frame) => frame.event === "turn-error" && frame.data.message === "again");
  expect(second.event).toBe("turn-error");
  const armed = await queuedContinue();
  await injectMessage("a human takes over");
  const superseded = await events.waitFor(
    (frame) =>
      frame.event === "inbox" && frame.data.state === "dequeued" && frame.data.prompt_id === armed.data.prompt_id,
  );
  expect(superseded.data.withdrawn).toBe(true);
  await events.waitFor(
    (frame) =>
      frame.event === "turn-complete" &&
      frame.data.prompt_id !== undefined &&
      submitted.has(String(frame.data.prompt_id)),
    10_000,
    events.frames.length - 1,
  );
  // Time under test: the superseded continue's 1.5 s backoff elapses and it still never runs.
  await Bun.sleep(1800);
  expect(continues(events)).toHaveLength(0);
}, 30_000);
