/**
 * Connections held open past their head: a body that stalls after a few bytes, and keep-alive
 * connections that send nothing more. The listener ran with no idle timeout (for its event
 * streams), so each such socket stayed open for good and enough of them exhaust the file limit.
 * They are now closed after --attach-idle-timeout; an event stream and a slow model-bound call
 * stay open, and /healthz is served throughout.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Socket, connect } from "node:net";
import { type Daemon, startDaemon } from "../support/daemon.ts";
import { rawSubscribe } from "../support/raw-sse.ts";

let daemon: Daemon;
beforeAll(async () => {
  daemon = await startDaemon({ args: ["--attach-idle-timeout=2s", "--sse-heartbeat=1m"] });
});
afterAll(async () => {
  await daemon.sigterm();
});

function openSocket(bytes: string): { socket: Socket; closed: Promise<number> } {
  const socket = connect(daemon.port, "127.0.0.1");
  socket.on("error", () => {});
  socket.on("data", () => {});
  const closed = new Promise<number>((resolve) => socket.on("close", () => resolve(Date.now())));
  socket.on("connect", () => socket.write(bytes));
  return { socket, closed };
}

function within(closed: Promise<number>, ms: number): Promise<number | "open"> {
  // Deadline: still open after `ms` is what the callers assert on.
  return Promise.race([closed, Bun.sleep(ms).then(() => "open" as const)]);
}

test("a body that stalls after 6 of its 100 bytes is closed after the idle timeout", async () => {
  const started = Date.now();
  const { closed } = openSocket(
    'POST /sessions/default/inject HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"mess',
  );
  const at = await within(closed, 15_000);
  expect(at).not.toBe("open");
  expect((at as number) - started).toBeGreaterThanOrEqual(1500);
  expect((await fetch(`${daemon.baseUrl}/healthz`)).status).toBe(200);
});

test("a keep-alive connection that sends nothing after its answer is closed", async () => {
  const { closed } = openSocket("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  expect(await within(closed, 15_000)).not.toBe("open");
});

test("an event stream quiet for longer than the idle timeout stays open", async () => {
  const subscriber = rawSubscribe(daemon.port, "/sessions/default/events");
  try {
    expect(await subscriber.status).toBe(200);
    // Time under test: quiet for longer than the idle timeout.
    await Bun.sleep(5000);
    expect(subscriber.isEnded).toBe(false);
    expect(subscriber.frames.some((frame) => frame.event === "capabilities")).toBe(true);
  } finally {
    subscriber.close();
  }
});
