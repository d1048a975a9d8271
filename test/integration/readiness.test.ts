/**
 * The wake_loops readiness check: /healthz turns 503 only when every live session has failed
 * three turns in a row with no clean turn since; a clean turn clears it; an interrupted turn
 * neither counts nor clears.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Daemon, postJson, startDaemon, tempDir } from "../support/daemon.ts";
import { type Collector, collect } from "../support/sse-client.ts";

const fail = { request: {}, responses: [{ error: { status: "503", message: "overloaded" } }] };
const slow = { request: {}, responses: [{ delayMs: 30_000, content: { role: "model", parts: [{ text: "never" }] } }] };
const ok = { request: {}, responses: [{ content: { role: "model", parts: [{ text: "fine" }] }, turnComplete: true }] };

let daemon: Daemon;
let events: Collector;
beforeAll(async () => {
  const script = join(tempDir(), "script.jsonl");
  writeFileSync(script, `${[fail, fail, slow, fail, ok].map((line) => JSON.stringify(line)).join("\n")}\n`);
  daemon = await startDaemon({ args: ["--model=scripted", `--script=${script}`] });
  events = collect(`${daemon.baseUrl}/sessions/default/events`);
  await events.waitFor((frame) => frame.event === "usage-update");
});
afterAll(async () => {
  events.close();
  await daemon.sigterm();
});

async function turn(expectEvent: "turn-error" | "turn-complete", interrupt = false): Promise<void> {
  const from = events.frames.length;
  await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "go" });
  if (interrupt) {
    await events.waitFor((frame) => frame.event === "status-update" && frame.data.turn_state === "streaming", 5000, from);
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
