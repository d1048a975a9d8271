/**
 * Slow-client attacks on the attach listener (the daemon's own wiring, started in the test process
 * so its subscriber count can be read): a subscriber that stops reading is cut once its buffer
 * fills while a reading one loses nothing; slowloris connections that trickle or stall their
 * header lines, and connections that send nothing, are closed by the listener's header timeout
 * (about 10 s), and /healthz is served all the while.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Socket, connect } from "node:net";
import { waitFor } from "../support/daemon.ts";
import { type InProcessAgent, startInProcessAgent } from "../support/in-process-agent.ts";
import { rawSubscribe } from "../support/raw-sse.ts";
import { collect } from "../support/sse-client.ts";

/** Bun's header timeout is about 10 s; allow for a loaded machine. */
const HEADER_TIMEOUT_BOUND_MS = 25_000;

interface SlowSocket {
  socket: Socket;
  closedAt: Promise<number>;
}

let agent: InProcessAgent;
let startedAt = 0;
const slowloris: SlowSocket[] = [];
const timers: Array<ReturnType<typeof setInterval>> = [];

function open(first: string, trickle?: string): SlowSocket {
  const socket = connect(agent.port, "127.0.0.1");
  socket.on("error", () => {});
  const closedAt = new Promise<number>((resolve) => socket.on("close", () => resolve(Date.now())));
  socket.on("connect", () => {
    if (first !== "") socket.write(first);
    if (trickle !== undefined) {
      let at = 0;
      const timer = setInterval(() => {
        if (!socket.destroyed) socket.write(trickle[at++ % trickle.length] ?? "");
      }, 100);
      timers.push(timer);
    }
  });
  return { socket, closedAt };
}

beforeAll(async () => {
  agent = await startInProcessAgent({ args: ["--subscriber-buffer=16", "--subscriber-buffer-bytes=65536"] });
  startedAt = Date.now();
  // Started first, checked last: the header timeout runs while the other tests do.
  slowloris.push(open("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n", "X-Slow: aaaaaaaaaaaaaaaaaaaa\r\n"));
  for (let i = 0; i < 100; i++) slowloris.push(open(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half-${i}: ab`));
  slowloris.push(open(""));
});
afterAll(async () => {
  for (const timer of timers) clearInterval(timer);
  for (const { socket } of slowloris) socket.destroy();
  await agent.stop();
});

test("a subscriber that stops reading is cut when it falls a buffer behind; a reading subscriber gets every row; the daemon keeps serving", async () => {
  const stalled = rawSubscribe(agent.port, "/sessions/default/events");
  const healthy = collect(`${agent.baseUrl}/sessions/default/events`);
  await healthy.waitFor((frame) => frame.event === "usage-update");
  await waitFor(() => (stalled.frames.length >= 3 ? true : undefined), 5_000, "stalled boot frames");
  expect(agent.agent.host.subscriberCount).toBe(2);
  stalled.pause();
  const big = "x".repeat(7000);
  for (let round = 0; round < 100 && agent.agent.host.subscriberCount > 1; round++) {
    const batch = Array.from({ length: 10 }, () =>
      fetch(`${agent.baseUrl}/sessions/default/inject`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ message: big }),
      }),
    );
    for (const response of await Promise.all(batch)) expect(response.status).toBe(200);
  }
  expect(agent.agent.host.subscriberCount).toBe(1);
  stalled.resume();
  // Deadline: the assertion below names a stream still open by then.
  await Promise.race([stalled.ended, Bun.sleep(10_000)]);
  expect(stalled.isEnded).toBe(true);
  const host = agent.agent.host;
  const key = await host.resolve(undefined, "default");
  const actor = await host.actor(key);
  await waitFor(
    () => (!actor.turnInFlight && actor.pendingCount === 0 ? true : undefined),
    30_000,
    "every queued turn done",
  );
  const head = await host.store.head(key);
  const rows = await waitFor(
    () => {
      const seqs = healthy.frames
        .filter((frame) => frame.event === "agent")
        .map((frame) => (frame.data as { seq: number }).seq);
      return seqs.length >= head ? seqs : undefined;
    },
    30_000,
    "every row at the reading subscriber",
  );
  healthy.close();
  expect(rows).toEqual(Array.from({ length: rows.length }, (_, i) => i + 1));
  expect(rows.length).toBeGreaterThanOrEqual(head);
  expect(stalled.frames.filter((frame) => frame.event === "agent").length).toBeLessThan(rows.length);
  expect((await fetch(`${agent.baseUrl}/healthz`)).status).toBe(200);
}, 60_000);

test("/healthz is served while a hundred slowloris connections hold half-sent headers", async () => {
  const open = slowloris.filter(({ socket }) => !socket.destroyed).length;
  expect(open).toBeGreaterThan(90);
  const health = await fetch(`${agent.baseUrl}/healthz`);
  expect(health.status).toBe(200);
});

test(
  "slowloris: connections trickling or stalling their headers, and silent ones, are all closed by the header timeout",
  async () => {
    const closed = await Promise.race([
      Promise.all(slowloris.map(({ closedAt }) => closedAt)),
      // Deadline: a connection still open by then fails the assertion below.
      Bun.sleep(HEADER_TIMEOUT_BOUND_MS + 1000).then(() => undefined),
    ]);
    expect(closed).toBeDefined();
    const latest = Math.max(...(closed ?? [0])) - startedAt;
    expect(latest).toBeLessThan(HEADER_TIMEOUT_BOUND_MS);
    expect((await fetch(`${agent.baseUrl}/healthz`)).status).toBe(200);
  },
  HEADER_TIMEOUT_BOUND_MS + 5000,
);
