/**
 * SseStream on a Bun direct stream (D154), served by a real Bun.serve and read over a real socket:
 * frames written before Bun starts the body arrive first and in order, a graceful close ends the
 * body after everything written, more early frames than the bound cut the stream, and a client
 * that stops reading is cut once more than `maxQueued` writes wait on its socket.
 */
import { afterEach, expect, test } from "bun:test";
import { connect, type Socket } from "node:net";
import { type SseStream, SseStreamGroup } from "../../../src/surfaces/http/sse-stream.ts";

const group = new SseStreamGroup();
const servers: Array<{ stop(force: boolean): void }> = [];
const sockets: Socket[] = [];
afterEach(() => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const server of servers.splice(0)) server.stop(true);
});

const encoder = new TextEncoder();
const frame = (n: number) => encoder.encode(`id: ${n}\nevent: agent\ndata: {"n":${n}}\n\n`);

/** A response body read as text: `until` a marker has arrived, then the `rest` to its end. */
function bodyText(response: Response) {
  const reader = response.body?.getReader();
  if (reader === undefined) throw new Error("no body");
  const decoder = new TextDecoder();
  let text = "";
  const more = async (): Promise<boolean> => {
    const chunk = await reader.read();
    if (!chunk.done) text += decoder.decode(chunk.value, { stream: true });
    return !chunk.done;
  };
  return {
    until: async (marker: string) => {
      while (!text.includes(marker)) if (!(await more())) throw new Error(`the body ended before ${marker}`);
    },
    rest: async () => {
      while (await more());
      return text;
    },
  };
}

/** Serves one stream built by `make`; returns the port. */
function serve(make: () => SseStream): number {
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, fetch: () => make().response });
  servers.push(server);
  return server.port as number;
}

test("frames written before the body starts, then live ones, arrive in order; close ends the body", async () => {
  let stream: SseStream | undefined;
  const port = serve(() => {
    stream = group.open({ maxQueued: 16, lowWater: 4 });
    for (let n = 1; n <= 3; n++) expect(stream.write(frame(n))).toBe(true);
    return stream;
  });
  const response = await fetch(`http://127.0.0.1:${port}/`);
  expect(response.headers.get("content-type")).toBe("text/event-stream");
  const reading = bodyText(response);
  // The early frames have arrived: the body has started, what follows is live.
  await reading.until("id: 3\n");
  for (let n = 4; n <= 6; n++) expect(stream?.write(frame(n))).toBe(true);
  stream?.close("done");
  expect(stream?.closed).toBe(true);
  expect(stream?.write(frame(7))).toBe(false);
  const body = await reading.rest();
  expect([...body.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))).toEqual([1, 2, 3, 4, 5, 6]);
});

test("more early frames than the bound: the write is refused and the stream closed as overflowed", () => {
  const reasons: string[] = [];
  const stream = group.open({ maxQueued: 2, lowWater: 1, onClose: (reason) => reasons.push(reason) });
  expect(stream.write(frame(1))).toBe(true);
  expect(stream.write(frame(2))).toBe(true);
  expect(stream.write(frame(3))).toBe(false);
  expect(stream.closed).toBe(true);
  expect(reasons).toEqual(["subscriber buffer overflow"]);
});

test("a client that stops reading is cut once more than maxQueued writes wait on its socket", async () => {
  const reasons: string[] = [];
  let stream: SseStream | undefined;
  const port = serve(() => {
    stream = group.open({ maxQueued: 64, lowWater: 16, onClose: (reason) => reasons.push(reason) });
    stream.write(frame(0));
    return stream;
  });
  await stalledClient(port);
  const big = new Uint8Array(64 * 1024).fill(65);
  let writes = 0;
  while (stream?.write(big) && writes < 10_000) {
    writes++;
    // Pacing: a turn of the loop now and then lets the socket's sink work.
    if (writes % 64 === 0) await Bun.sleep(1);
  }
  expect(stream?.closed).toBe(true);
  expect(reasons).toEqual(["subscriber buffer overflow"]);
  // The socket buffers and the sink took some megabytes first; then at most 64 more writes waited.
  expect(writes).toBeLessThan(10_000);
});

test("a burst written in one tick (more frames than maxQueued) reaches a reading client whole and in order", async () => {
  const reasons: string[] = [];
  let stream: SseStream | undefined;
  const port = serve(() => {
    stream = group.open({ maxQueued: 16, lowWater: 4, onClose: (reason) => reasons.push(reason) });
    stream.write(frame(1));
    return stream;
  });
  const response = await fetch(`http://127.0.0.1:${port}/`);
  const reading = bodyText(response);
  // The early frame has arrived: the body has started, the burst is live.
  await reading.until("id: 1\n");
  for (let n = 2; n <= 1000; n++) expect(stream?.write(frame(n))).toBe(true);
  stream?.close("done");
  const body = await reading.rest();
  expect([...body.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))).toEqual(
    Array.from({ length: 1000 }, (_, i) => i + 1),
  );
  expect(reasons).toEqual(["done"]);
});

/**
 * A raw client that sends its GET, reads until the stream's opening frame (`id: 0`, written before
 * the body starts) has come, so the body has started, and then reads nothing more.
 */
async function stalledClient(port: number): Promise<Socket> {
  const socket = connect(port, "127.0.0.1");
  sockets.push(socket);
  await new Promise<void>((resolve) => {
    let seen = "";
    const read = (chunk: Buffer) => {
      seen += chunk.toString("latin1");
      if (!seen.includes("id: 0\n")) return;
      socket.pause();
      socket.off("data", read);
      resolve();
    };
    socket.on("data", read);
    socket.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  });
  return socket;
}

test("large frames: a client that stops reading is cut once more than maxQueuedBytes wait, long before maxQueued frames do", async () => {
  const reasons: string[] = [];
  let stream: SseStream | undefined;
  const port = serve(() => {
    stream = group.open({
      maxQueued: 1000,
      maxQueuedBytes: 1024 * 1024,
      lowWater: 16,
      onClose: (reason) => reasons.push(reason),
    });
    stream.write(frame(0));
    return stream;
  });
  await stalledClient(port);
  const big = new Uint8Array(256 * 1024).fill(66);
  let writes = 0;
  while (stream?.write(big) && writes < 400) {
    writes++;
    // Pacing: each write gets a turn of the event loop for the socket's sink.
    await Bun.sleep(1);
  }
  expect(reasons).toEqual(["subscriber buffer overflow"]);
  // The kernel's socket buffers take a few MiB; past them at most 1 MiB more may wait (100 MiB
  // would have been written before 1000 frames waited).
  expect(writes).toBeLessThan(100);
});

test("whenWritable waits while writes wait on the socket, and resolves when the client reads or the stream closes", async () => {
  const streams: SseStream[] = [];
  const port = serve(() => {
    const stream = group.open({ maxQueued: 10_000, lowWater: 16 });
    stream.write(frame(0));
    streams.push(stream);
    return stream;
  });
  const big = new Uint8Array(256 * 1024).fill(67);
  async function backedUp(stream: SseStream): Promise<{ settled: () => boolean; done: Promise<void> }> {
    let settled = false;
    for (let i = 0; i < 200; i++) {
      stream.write(big);
      stream.flush();
      let ready = false;
      const probe = stream.whenWritable().then(() => (ready = true));
      // Time under test: a write the socket takes settles within 5 ms; one still waiting is backed up.
      await Bun.sleep(5);
      if (!ready) {
        const done = probe.then(() => {
          settled = true;
        });
        return { settled: () => settled, done };
      }
    }
    throw new Error("the socket never backed up");
  }
  const reader = await stalledClient(port);
  const first = streams[0] as SseStream;
  const waiting = await backedUp(first);
  // Time under test: still waiting 50 ms on, while the client reads nothing.
  await Bun.sleep(50);
  expect(waiting.settled()).toBe(false);
  reader.resume();
  await waiting.done;
  expect(first.closed).toBe(false);

  await stalledClient(port);
  const second = streams[1] as SseStream;
  const parked = await backedUp(second);
  second.abort("test over");
  await parked.done;
  expect(second.closed).toBe(true);
});
