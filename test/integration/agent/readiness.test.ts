/**
 * The wake_loops readiness check (D363): /healthz turns 503 only when every live wake loop (a
 * session that has scheduled a wake) has failed three turns in a row with no clean turn since.
 * A session that never scheduled one does not count; an interrupted turn neither counts nor
 * clears; a clean turn clears. One multi-session scripted daemon, its model calls in order.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Daemon, postJson, startDaemon } from "../../support/daemon.ts";
import { call, failWith, modelStreamed, say, stall, writeScript } from "../../support/scripted.ts";
import { type Collector, collect } from "../../support/sse-client.ts";

const fail = failWith("503", "overloaded");
const sleep = call("schedule_next_turn", { delay_seconds: 3600, reason: "next poll" });
const SCRIPT = [
  fail, // default x3: not a loop
  fail,
  fail,
  sleep, // a: becomes a loop
  sleep, // b: becomes a loop
  fail, // a x2
  fail,
  stall("thinking", 30_000), // a: interrupted
  fail, // a: third failure
  fail, // b x3
  fail,
  fail,
  say("fine"), // b: clean
];

let daemon: Daemon;
const streams = new Map<string, Collector>();
beforeAll(async () => {
  daemon = await startDaemon({
    args: ["--multi-session", "--model=scripted", `--script=${writeScript(SCRIPT)}`, "--auto-continue=false"],
  });
  await attach("default");
});

async function attach(id: string): Promise<void> {
  const events = collect(`${daemon.baseUrl}/sessions/${id}/events`);
  streams.set(id, events);
  await events.waitFor((frame) => frame.event === "usage-update");
}
afterAll(async () => {
  for (const events of streams.values()) events.close();
  await daemon.sigterm();
});

async function turn(id: string, expectEvent: "turn-error" | "turn-complete", interrupt = false): Promise<void> {
  const events = streams.get(id) as Collector;
  const from = events.frames.length;
  const base = `${daemon.baseUrl}/sessions/${id}`;
  await postJson(`${base}/inject`, { message: "go" });
  if (interrupt) {
    await events.waitFor(modelStreamed("thinking"), 5000, from);
    await postJson(`${base}/interrupt`, { hold: false });
  }
  await events.waitFor((frame) => frame.event === expectEvent, 5000, from);
}

async function health(): Promise<{ status: number; wake: string | undefined }> {
  const response = await fetch(`${daemon.baseUrl}/healthz`);
  const body = (await response.json()) as { checks: Record<string, string> };
  return { status: response.status, wake: body.checks.wake_loops };
}

const READY = { status: 200, wake: "ready" };

test("the only session, never having scheduled a wake, is no loop: three failures leave readiness alone", async () => {
  for (let n = 0; n < 3; n++) await turn("default", "turn-error");
  expect(await health()).toEqual(READY);
});

test("one loop failing while another is clean is ready; every loop failing is 503; a clean turn clears", async () => {
  // a and b become loops; c stays a clean session that is no loop (it clears nothing).
  for (const id of ["a", "b", "c"])
    expect((await postJson(`${daemon.baseUrl}/sessions`, { sessionID: id })).status).toBe(201);
  await attach("a");
  await attach("b");
  await turn("a", "turn-complete");
  await turn("b", "turn-complete");
  await turn("a", "turn-error");
  await turn("a", "turn-error");
  await turn("a", "turn-error", true);
  expect(await health()).toEqual(READY);
  await turn("a", "turn-error");
  // a has failed three in a row; b is clean.
  expect(await health()).toEqual(READY);
  await turn("b", "turn-error");
  await turn("b", "turn-error");
  expect(await health()).toEqual(READY);
  await turn("b", "turn-error");
  expect(await health()).toEqual({ status: 503, wake: "failed" });
  await turn("b", "turn-complete");
  expect(await health()).toEqual(READY);
});
