/**
 * Interrupt, pause and resume against a real daemon driven by the scripted model: one test per
 * row of the spec's States and transitions table this capability owns, in one session's life.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Daemon, postJson, startDaemon, tempDir, waitFor } from "../../support/daemon.ts";
import { modelStreamed, stall } from "../../support/scripted.ts";
import { type Collector, type Frame, collect } from "../../support/sse-client.ts";

const slow = stall("thinking", 30_000);
const reply = (text: string) => ({
  request: {},
  responses: [{ content: { role: "model", parts: [{ text }] }, turnComplete: true }],
});

let daemon: Daemon;
let stream: Collector;
let script: string;
beforeAll(async () => {
  script = join(tempDir(), "script.jsonl");
  writeFileSync(
    script,
    `${[slow, reply("reply-1"), slow, reply("reply-3"), reply("reply-4"), reply("reply-5")].map((line) => JSON.stringify(line)).join("\n")}\n`,
  );
  daemon = await startDaemon({ args: ["--model=scripted", `--script=${script}`] });
  stream = collect(`${daemon.baseUrl}/sessions/default/events`);
  await stream.waitFor((frame) => frame.event === "usage-update");
});
afterAll(async () => {
  stream.close();
  await daemon.sigterm();
});

const base = () => `${daemon.baseUrl}/sessions/default`;
const status = async () =>
  (await (await fetch(`${base()}/status`)).json()) as {
    state: string;
    turn_in_flight: boolean;
    paused_since: string;
    pause_reason?: string;
  };
const turns = async () =>
  ((await (await fetch(`${base()}/usage`)).json()) as { overall: { turns: number } }).overall.turns;
const from = () => stream.frames.length;
// The model has been asked (not just the turn started): an interrupt now consumes the slow line.
const streaming = (start: number) => stream.waitFor(modelStreamed("thinking"), 10_000, start);
const agentText = (frame: Frame) =>
  (frame.data.event as { Content: { parts: Array<{ text?: string }> } | null }).Content?.parts[0]?.text ?? "";

test("running -> interrupt (hold): the turn ends canceled, the session parks, an audit row is written", async () => {
  const start = from();
  expect((await postJson(`${base()}/inject`, { message: "one" })).status).toBe(200);
  await streaming(start);
  const response = await postJson(`${base()}/interrupt`);
  expect(response.status).toBe(200);
  expect(response.headers.get("x-interrupted")).toBeNull();
  expect(response.headers.get("x-hold")).toBeNull();
  expect(await response.json()).toEqual({
    interrupted: true,
    paused: true,
    running_subagents: [],
    stopped_subagents: [],
    session: "default",
  });
  const error = await stream.waitFor((frame) => frame.event === "turn-error", 5000, start);
  expect(error.data).toMatchObject({ kind: "canceled", retryable: false });
  const pause = await stream.waitFor((frame) => frame.event === "pause", 5000, start);
  expect(pause.data).toMatchObject({ state: "paused", reason: "operator-interrupt", interrupted: true });
  const audit = await stream.waitFor(
    (frame) => frame.event === "agent" && (frame.data.event as { Author: string }).Author === "attach/interrupt",
    5000,
    start,
  );
  expect((audit.data.event as { CustomMetadata: Record<string, unknown> }).CustomMetadata).toMatchObject({
    event: "attach-interrupt",
    source: "operator",
    hold: true,
    interrupted: true,
  });
  expect((audit.data.event as { CustomMetadata: Record<string, unknown> }).CustomMetadata.caller).toBeUndefined();
  const parked = await status();
  expect(parked).toMatchObject({ state: "paused", turn_in_flight: false, pause_reason: "operator-interrupt" });
  expect(parked.paused_since).not.toBe("0001-01-01T00:00:00Z");
});

test("paused -> inject queues without un-parking; resume continue drains it", async () => {
  const start = from();
  const before = await turns();
  const queued = (await (await postJson(`${base()}/inject`, { message: "two" })).json()) as {
    prompt_id: string;
    woke: boolean;
  };
  // The inject's wake decision is made before it answers: a parked session starts nothing, and
  // only a resume schedules a turn again.
  expect(queued.woke).toBe(false);
  await stream.waitFor((frame) => frame.event === "inbox" && frame.data.prompt_id === queued.prompt_id, 5000, start);
  expect((await status()).state).toBe("paused");
  expect(await turns()).toBe(before);
  const resumed = await postJson(`${base()}/resume`, { mode: "continue" });
  expect(await resumed.json()).toMatchObject({ resumed: true, mode: "continue", session: "default" });
  await stream.waitFor(
    (frame) => frame.event === "pause" && frame.data.state === "resumed" && frame.data.mode === "continue",
    5000,
    start,
  );
  const done = await stream.waitFor((frame) => frame.event === "turn-complete", 5000, start);
  expect(done.data.prompt_id).toBe(queued.prompt_id);
});

test("running -> interrupt with hold false: the turn is cancelled, not parked, and queued work runs", async () => {
  const start = from();
  expect((await postJson(`${base()}/inject`, { message: "three" })).status).toBe(200);
  await streaming(start);
  const queued = (await (await postJson(`${base()}/inject`, { message: "four" })).json()) as { prompt_id: string };
  const response = await postJson(`${base()}/interrupt`, { hold: false });
  expect(await response.json()).toMatchObject({ interrupted: true, paused: false });
  const done = await stream.waitFor((frame) => frame.event === "turn-complete", 5000, start);
  expect(done.data.prompt_id).toBe(queued.prompt_id);
  expect((await status()).state).toBe("idle");
});

test("interrupt with nothing in flight changes nothing and says so", async () => {
  const response = await postJson(`${base()}/interrupt`);
  expect(response.headers.get("x-interrupted")).toBe("nothing-in-flight");
  expect(await response.json()).toMatchObject({ interrupted: false, paused: false });
  expect((await status()).state).toBe("idle");
});

test("idle -> pause transitions once; resume abandon drops what was queued, for good", async () => {
  const start = from();
  expect(await (await postJson(`${base()}/pause`, { reason: "maintenance" })).json()).toMatchObject({
    paused: true,
    transitioned: true,
    state: "paused",
    pause_reason: "maintenance",
    session: "default",
  });
  expect(await (await postJson(`${base()}/pause`)).json()).toMatchObject({
    transitioned: false,
    pause_reason: "maintenance",
  });
  const before = await turns();
  const dropped = (await (await postJson(`${base()}/inject`, { message: "five" })).json()) as { prompt_id: string };
  expect(await (await postJson(`${base()}/resume`, { mode: "abandon" })).json()).toMatchObject({
    resumed: true,
    mode: "abandon",
    state: "idle",
  });
  const audit = await stream.waitFor(
    (frame) => frame.event === "agent" && (frame.data.event as { Author: string }).Author === "attach/resume",
    5000,
    start,
  );
  expect(
    (audit.data.event as { CustomMetadata: { abandoned_prompt_ids: string[] } }).CustomMetadata.abandoned_prompt_ids,
  ).toEqual([dropped.prompt_id]);
  // Read once the stream has delivered the resume's row: every frame before it has arrived too.
  const parks = stream.frames
    .slice(start)
    .filter((frame) => frame.event === "pause" && (frame.data as { state?: string }).state === "paused");
  expect(parks).toHaveLength(1);
  // The resume scheduled before it answered, with the queue already dropped: nothing started, and
  // nothing but a new message or wake starts a turn later.
  expect(await status()).toMatchObject({ state: "idle", turn_in_flight: false });
  expect(await turns()).toBe(before);
});

test("paused -> resume steer runs a turn whose prompt is the framed steer; bad resumes are 400", async () => {
  const start = from();
  expect((await postJson(`${base()}/pause`)).status).toBe(200);
  expect((await postJson(`${base()}/resume`, { mode: "steer" })).status).toBe(400);
  expect((await postJson(`${base()}/resume`, { mode: "rewind" })).status).toBe(400);
  expect(
    await (await postJson(`${base()}/resume`, { mode: "steer", steer: "look at the logs first" })).json(),
  ).toMatchObject({ resumed: true, mode: "steer" });
  await stream.waitFor((frame) => frame.event === "turn-complete", 5000, start);
  const prompt = stream.frames
    .slice(start)
    .find((frame) => frame.event === "agent" && (frame.data.event as { Author: string }).Author === "user");
  expect(prompt && agentText(prompt)).toBe("[operator steer after an interrupt] look at the logs first");
  expect(await (await postJson(`${base()}/resume`)).json()).toMatchObject({ resumed: false });
});

test("an abandoned message is not re-run after a restart", async () => {
  const before = await turns();
  stream.close();
  await daemon.sigterm();
  daemon = await startDaemon({ args: ["--model=scripted", `--script=${script}`], sessionDb: daemon.sessionDb });
  stream = collect(`${daemon.baseUrl}/sessions/default/events`);
  await stream.waitFor((frame) => frame.event === "usage-update");
  // Inbox work left by the last run is drained (and logged) before the daemon listens: none was.
  expect(daemon.log()).not.toContain("draining");
  expect(await turns()).toBe(before);
  await waitFor(async () => ((await status()).turn_in_flight ? undefined : true), 2000, "idle");
});
