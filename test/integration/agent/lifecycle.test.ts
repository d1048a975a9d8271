/**
 * Process lifecycle and resource faults against real daemons: SIGTERM with an open stream and
 * a turn in flight, a second daemon on the same store, idle eviction and rebuild, a crashing
 * turn worker, and a subscriber that stops reading.
 */
import { expect, test } from "bun:test";
import { daemonScope } from "../../support/daemon-scope.ts";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Daemon, MAIN, postJson, tempDir, waitFor } from "../../support/daemon.ts";
import { rawSubscribe } from "../../support/raw-sse.ts";
import { collect } from "../../support/sse-client.ts";

const scope = daemonScope();

function script(lines: unknown[]): string {
  const path = join(tempDir(), "script.jsonl");
  writeFileSync(path, `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`);
  return path;
}

const text = (value: string, extra: Record<string, unknown> = {}) => ({
  request: {},
  responses: [{ ...extra, content: { role: "model", parts: [{ text: value }] }, turnComplete: true }],
});

async function turnsOf(daemon: Daemon, session: string): Promise<number> {
  return ((await (await fetch(`${daemon.baseUrl}/sessions/${session}/usage`)).json()) as { overall: { turns: number } })
    .overall.turns;
}

test("SIGTERM: the turn in flight ends canceled, streams are hung up after it, exit code 0", async () => {
  const daemon = await scope.start({
    args: ["--model=scripted", `--script=${script([text("never finished", { delayMs: 30_000 })])}`],
  });
  const stream = collect(`${daemon.baseUrl}/sessions/default/events`);
  await stream.waitFor((frame) => frame.event === "usage-update");
  expect((await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "long job" })).status).toBe(200);
  await stream.waitFor((frame) => frame.event === "status-update" && frame.data.turn_state === "streaming");
  const started = Date.now();
  const code = await daemon.sigterm();
  expect(code).toBe(0);
  expect(Date.now() - started).toBeLessThan(10_000);
  const error = await stream.waitFor((frame) => frame.event === "turn-error");
  expect(error.data).toMatchObject({ kind: "canceled", retryable: false });
  const after = stream.frames.slice(stream.frames.indexOf(error)).map((frame) => frame.event);
  expect(after).toEqual(["turn-error", "status-update", "usage-update"]);
  stream.close();
  expect(daemon.log()).toContain("shutdown complete");
}, 30_000);

test("a second daemon on the same store refuses to start, naming the reason", async () => {
  const first = await scope.start();
  const second = Bun.spawn(
    [process.execPath, MAIN, "agent", "--attach-listen=127.0.0.1:0", `--session-db=${first.sessionDb}`],
    { stderr: "pipe", stdout: "pipe" },
  );
  const code = await second.exited;
  const log = await new Response(second.stderr).text();
  expect(code).not.toBe(0);
  expect(log).toContain("in use by another spar daemon");
  expect((await fetch(`${first.baseUrl}/healthz`)).status).toBe(200);
});

test("idle eviction: a quiet session leaves memory, then rebuilds on first touch with its history and usage", async () => {
  const daemon = await scope.start({ args: ["--multi-session", "--session-idle-timeout=300ms"] });
  expect((await postJson(`${daemon.baseUrl}/sessions`, { sessionID: "napper" })).status).toBe(201);
  expect((await postJson(`${daemon.baseUrl}/sessions/napper/inject`, { message: "remember me" })).status).toBe(200);
  await waitFor(async () => ((await turnsOf(daemon, "napper")) === 1 ? true : undefined), 5000, "first turn");
  const statusOf = async () => {
    const listed = (await (await fetch(`${daemon.baseUrl}/sessions`)).json()) as {
      sessions: Array<{ sessionID: string; status: string; user: string; title?: string }>;
    };
    return listed.sessions.find((row) => row.sessionID === "napper");
  };
  const cached = async () =>
    Number(/^spar_worker_cached_messages (\d+)$/m.exec(await (await fetch(`${daemon.baseUrl}/metrics`)).text())?.[1]);
  const idle = await waitFor(
    async () => ((await statusOf())?.status === "idle" ? statusOf() : undefined),
    5000,
    "eviction",
  );
  expect(idle).toMatchObject({ user: "local", title: "remember me" });
  // The turn worker dropped its copy of the evicted conversation with the actor.
  expect(await cached()).toBe(0);
  expect(await turnsOf(daemon, "napper")).toBe(1);
  expect((await statusOf())?.status).toBe("active");
  const replay = collect(`${daemon.baseUrl}/sessions/napper/events`);
  await replay.waitFor((frame) => frame.event === "agent" && (frame.data as { seq: number }).seq === 2);
  expect(await cached()).toBe(0);
  expect((await postJson(`${daemon.baseUrl}/sessions/napper/inject`, { message: "again" })).status).toBe(200);
  const row = await replay.waitFor((frame) => frame.event === "agent" && (frame.data as { seq: number }).seq === 3);
  // The rebuilt conversation went to the model: echo counts "remember me" twice plus "again"
  // (27 characters, 7 tokens); a lost history would count only "again" (2 tokens).
  const done = await replay.waitFor((frame) => frame.event === "turn-complete");
  replay.close();
  expect(row.id).toBe("3");
  expect(done.data.tokens_in).toBe(7);
}, 20_000);

test("a turn worker that crashes: the turn ends with turn-error, the worker is replaced, /healthz stays 200", async () => {
  const daemon = await scope.start({
    args: [
      "--workers=1",
      "--model=scripted",
      `--script=${script([text("unused", { crash: true }), text("after the crash")])}`,
    ],
  });
  const stream = collect(`${daemon.baseUrl}/sessions/default/events`);
  await stream.waitFor((frame) => frame.event === "usage-update");
  expect((await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "boom" })).status).toBe(200);
  const error = await stream.waitFor((frame) => frame.event === "turn-error");
  expect(error.data).toMatchObject({ kind: "unknown", retryable: false });
  expect(String(error.data.message)).toContain("turn worker crashed");
  expect((await fetch(`${daemon.baseUrl}/healthz`)).status).toBe(200);
  expect((await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "next" })).status).toBe(200);
  const done = await stream.waitFor((frame) => frame.event === "turn-complete");
  expect(done.data.model).toBe("scripted");
  stream.close();
}, 20_000);

test("a turn worker that spins: past --worker-liveness the turn ends with turn-error, the worker is replaced, /healthz stays 200", async () => {
  const daemon = await scope.start({
    args: [
      "--workers=1",
      "--worker-liveness=1s",
      "--model=scripted",
      `--script=${script([text("unused", { spin: true }), text("after the spin")])}`,
    ],
  });
  const stream = collect(`${daemon.baseUrl}/sessions/default/events`);
  await stream.waitFor((frame) => frame.event === "usage-update");
  const started = Date.now();
  expect((await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "spin" })).status).toBe(200);
  await stream.waitFor((frame) => frame.event === "status-update" && frame.data.turn_state === "streaming");
  // The daemon's own thread is free while the worker spins.
  expect((await fetch(`${daemon.baseUrl}/healthz`)).status).toBe(200);
  const error = await stream.waitFor((frame) => frame.event === "turn-error", 10_000);
  expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  expect(error.data).toMatchObject({ kind: "unknown", retryable: false });
  expect(String(error.data.message)).toContain("turn worker unresponsive");
  expect(daemon.log()).toContain("turn worker unresponsive");
  expect((await fetch(`${daemon.baseUrl}/healthz`)).status).toBe(200);
  const mark = stream.frames.length;
  expect((await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "next" })).status).toBe(200);
  const done = await stream.waitFor((frame) => frame.event === "turn-complete", 10_000, mark);
  expect(done.data.model).toBe("scripted");
  stream.close();
}, 30_000);

test("a subscriber that stops reading is closed when its buffer fills; another subscriber gets every row", async () => {
  const daemon = await scope.start({ args: ["--subscriber-buffer=64"] });
  const stalled = rawSubscribe(daemon.port, "/sessions/default/events");
  const healthy = collect(`${daemon.baseUrl}/sessions/default/events`);
  await healthy.waitFor((frame) => frame.event === "usage-update");
  await waitFor(() => (stalled.frames.length >= 3 ? true : undefined), 5000, "stalled boot frames");
  stalled.pause();
  const big = "x".repeat(7000);
  let turns = 0;
  for (let round = 0; round < 60; round++) {
    const batch = Array.from({ length: 10 }, () =>
      postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: big }),
    );
    for (const response of await Promise.all(batch)) expect(response.status).toBe(200);
    turns += 10;
    // Pacing, not a wait: a breath between batches lets turns run while the subscriber stalls.
    await Bun.sleep(5);
  }
  // Reading again drains what the kernel buffered; the server must have cut the stream short.
  stalled.resume();
  // Deadline: the assertion below names a stream still open by then.
  await Promise.race([stalled.ended, Bun.sleep(10_000)]);
  expect(stalled.isEnded).toBe(true);
  const finalTurns = await waitFor(
    async () => {
      const count = await turnsOf(daemon, "default");
      const status = (await (await fetch(`${daemon.baseUrl}/sessions/default/status`)).json()) as {
        turn_in_flight: boolean;
      };
      return !status.turn_in_flight && count > 0 ? count : undefined;
    },
    30_000,
    "turns done",
  );
  const rows = await waitFor(
    () => {
      const seqs = healthy.frames
        .filter((frame) => frame.event === "agent")
        .map((frame) => (frame.data as { seq: number }).seq);
      return seqs.length >= finalTurns * 2 ? seqs : undefined;
    },
    30_000,
    "healthy subscriber rows",
  );
  healthy.close();
  expect(turns).toBeGreaterThan(0);
  expect(rows).toEqual(Array.from({ length: rows.length }, (_, i) => i + 1));
  const stalledRows = stalled.frames.filter((frame) => frame.event === "agent").length;
  expect(stalledRows).toBeLessThan(rows.length);
  expect((await fetch(`${daemon.baseUrl}/healthz`)).status).toBe(200);

  // A history many times the 64-frame buffer replays whole to a new subscriber (paced, not cut),
  // and to one resuming midway.
  for (const since of [0, Math.floor(rows.length / 2)]) {
    const late = collect(`${daemon.baseUrl}/sessions/default/events?since=${since}`);
    const replayed = await waitFor(
      () => {
        const seqs = late.frames
          .filter((frame) => frame.event === "agent")
          .map((frame) => (frame.data as { seq: number }).seq);
        return seqs.length >= rows.length - since ? seqs : undefined;
      },
      30_000,
      `replay from ${since}`,
    );
    // Every row from the cursor on, contiguous; rows committed after `rows` was read (the last
    // turn's tail may still have been arriving) come too.
    expect(replayed.length).toBeGreaterThanOrEqual(rows.length - since);
    expect(replayed).toEqual(Array.from({ length: replayed.length }, (_, i) => since + i + 1));
    late.close();
  }
}, 90_000);

function rssKiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((candidate) => candidate.startsWith("VmRSS:"));
  return Number(line?.split(/\s+/)[1] ?? Number.NaN);
}

test("subscribers that stall while replaying a history of large rows hold about a page each, not a 500-row page", async () => {
  const daemon = await scope.start({ args: ["--multi-session"] });
  expect((await postJson(`${daemon.baseUrl}/sessions`, { sessionID: "big" })).status).toBe(201);
  const inject = `${daemon.baseUrl}/sessions/big/inject`;
  const big = "y".repeat(7000);
  // Injects that queue during a turn become one bundled prompt row (D36), echoed back: rows of
  // up to ~110 KB, ~20 MB of frames in all.
  for (let round = 0; round < 100; round++) {
    const batch = Array.from({ length: 16 }, (_, i) => postJson(inject, { message: `${round}.${i} ${big}` }));
    for (const response of await Promise.all(batch)) expect(response.status).toBe(200);
  }
  // Settled: no turn running and the turn count unchanged over half a second.
  const turns = await waitFor(
    async () => {
      const first = await turnsOf(daemon, "big");
      // Poll with a quiet window: the gap between two queued turns is far shorter.
      await Bun.sleep(500);
      const status = (await (await fetch(`${daemon.baseUrl}/sessions/big/status`)).json()) as {
        turn_in_flight: boolean;
      };
      return !status.turn_in_flight && (await turnsOf(daemon, "big")) === first ? first : undefined;
    },
    60_000,
    "turns done",
  );
  const before = rssKiB(daemon.process.pid);
  const stalled = Array.from({ length: 20 }, () => {
    const subscriber = rawSubscribe(daemon.port, "/sessions/big/events?since=0");
    subscriber.pause();
    return subscriber;
  });
  // Time under test: the window in which replays that buffer whole pages would grow the RSS.
  await Bun.sleep(3000);
  const grownMiB = (rssKiB(daemon.process.pid) - before) / 1024;
  // Measured: with 500-row pages each stalled replay held the whole history (+790 MiB for the
  // 20); with pages sized to 1 MiB (D160) RSS does not grow measurably.
  expect(grownMiB).toBeLessThan(150);
  for (const subscriber of stalled) subscriber.close();
  // A reader that keeps up still gets the whole history, in order.
  const reader = collect(`${daemon.baseUrl}/sessions/big/events?since=0`);
  const agentSeqs = () =>
    reader.frames.filter((frame) => frame.event === "agent").map((frame) => (frame.data as { seq: number }).seq);
  // A barrier: the feed is ordered, so once the inbox frame of a message queued now (wake:false:
  // no turn, no row) arrives after the replay, the whole history has arrived before it.
  const barrier = (await (await postJson(inject, { message: "barrier", wake: false })).json()) as { prompt_id: string };
  await reader.waitFor((frame) => frame.event === "inbox" && frame.data.prompt_id === barrier.prompt_id, 30_000);
  const seqs = agentSeqs();
  reader.close();
  expect(seqs.length).toBeGreaterThanOrEqual(turns * 2);
  expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
}, 90_000);
