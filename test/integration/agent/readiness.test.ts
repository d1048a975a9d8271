/**
 * The wake_loops readiness check: /healthz turns 503 only when every live session has failed
 * three turns in a row with no clean turn since; a clean turn clears it; an interrupted turn
 * neither counts nor clears.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Daemon, postJson } from "../../support/daemon.ts";
import { type ScriptedDaemon, failWith, modelStreamed, say, stall, startScripted } from "../../support/scripted.ts";
import type { Collector } from "../../support/sse-client.ts";

const fail = failWith("503", "overloaded");

let subject: ScriptedDaemon;
let daemon: Daemon;
let events: Collector;
beforeAll(async () => {
  subject = await startScripted([fail, fail, stall("thinking", 30_000), fail, say("fine")]);
  ({ daemon, events } = subject);
});
afterAll(async () => {
  await subject.stop();
});

async function turn(expectEvent: "turn-error" | "turn-complete", interrupt = false): Promise<void> {
  const from = events.frames.length;
  await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "go" });
  if (interrupt) {
    await events.waitFor(modelStreamed("thinking"), 5000, from);
    await postJson(`${daemon.baseUrl}/sessions/default/interrupt`, { hold: false });
  }
  await events.waitFor((frame) => frame.event === expectEvent, 5000, from);
}

async function health(): Promise<{ status: number; wake: string | undefined }> {
  const response = await fetch(`${daemon.baseUrl}/healthz`);
  const body = (await response.json()) as { checks: Record<string, string> };
  return { status: response.status, wake: body.checks.wake_loops };
}

test("three failed turns in a row make the wake loops fail; interrupts do not count; a clean turn clears", async () => {
  await turn("turn-error");
  await turn("turn-error");
  expect(await health()).toEqual({ status: 200, wake: "ready" });
  await turn("turn-error", true);
  expect(await health()).toEqual({ status: 200, wake: "ready" });
  await turn("turn-error");
  expect(await health()).toEqual({ status: 503, wake: "failed" });
  await turn("turn-complete");
  expect(await health()).toEqual({ status: 200, wake: "ready" });
});
