/**
 * Two attach listeners in one process (as svc main, A2A and AG-UI will be) own their streams:
 * draining one hangs up only its own event streams, and each heartbeat pings only its own
 * listener's streams. Both listeners serve one real session host over real sockets (port 0).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { SessionHost } from "../../../src/runtime/session-host.ts";
import type { AttachContext } from "../../../src/surfaces/attach/attach-context.ts";
import { type AttachServer, startAttachServer } from "../../../src/surfaces/attach/attach-server.ts";
import { startTestHost, testAttachContext } from "../../support/attach-app.ts";

const _quiet = { info: () => {}, warn: () => {}, error: () => {} };
let host: SessionHost;
const servers: AttachServer[] = [];
const readers: Array<ReadableStreamDefaultReader<Uint8Array>> = [];

beforeAll(async () => {
  host = await startTestHost();
});

afterAll(async () => {
  for (const reader of readers) await reader.cancel().catch(() => {});
  for (const server of servers) await server.drain(100);
  await host.close();
});

function context(heartbeatMs: number): AttachContext {
  return testAttachContext(host, { heartbeatMs });
}

async function listener(heartbeatMs: number): Promise<AttachServer> {
  const server = await startAttachServer(context(heartbeatMs), "127.0.0.1", 0);
  servers.push(server);
  return server;
}

/** An open /events stream whose text so far is `text()`; `ended` settles when the server ends the body. */
async function subscribe(server: AttachServer) {
  const response = await fetch(`http://127.0.0.1:${server.port}/sessions/default/events`);
  expect(response.status).toBe(200);
  const reader = (response.body as ReadableStream<Uint8Array>).getReader() as ReadableStreamDefaultReader<Uint8Array>;
  readers.push(reader);
  const decoder = new TextDecoder();
  let text = "";
  const changed = new Set<() => void>();
  const ended = (async () => {
    for (;;) {
      const chunk = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (chunk.done) break;
      text += decoder.decode(chunk.value, { stream: true });
      for (const wake of changed) wake();
    }
    return true;
  })();
  /** Resolves once the text so far matches `predicate` (checked on every chunk). */
  const until = (predicate: (text: string) => boolean) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (!predicate(text)) return;
        changed.delete(check);
        resolve();
      };
      changed.add(check);
      check();
    });
  return { text: () => text, ended, until };
}

const pings = (text: string) => text.split(": ping\n\n").length - 1;

test("draining one listener hangs up its streams only: the other listener's stream stays open and live", async () => {
  const first = await listener(60_000);
  const second = await listener(60_000);
  const onFirst = await subscribe(first);
  const onSecond = await subscribe(second);
  await Promise.all([
    onFirst.until((t) => t.includes("event: usage-update")),
    onSecond.until((t) => t.includes("event: usage-update")),
  ]);

  await first.drain(1000);
  expect(await onFirst.ended).toBe(true);

  const injected = await fetch(`http://127.0.0.1:${second.port}/sessions/default/inject`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ message: "still here?", wake: false }),
  });
  expect(injected.status).toBe(200);
  const { prompt_id: promptId } = (await injected.json()) as { prompt_id: string };
  await onSecond.until((t) => t.includes(`"prompt_id":"${promptId}"`));
  const settled = await Promise.race([onSecond.ended, Promise.resolve("open")]);
  expect(settled).toBe("open");
});

test("each listener's heartbeat pings its own streams only", async () => {
  const fast = await listener(20);
  const slow = await listener(60_000);
  const onSlow = await subscribe(slow);
  const onFast = await subscribe(fast);
  await onSlow.until((t) => t.includes("event: usage-update"));
  // Three pings on the fast listener's stream: a heartbeat shared by the process would have written
  // each of them to the slow listener's stream in the same tick.
  await onFast.until((t) => pings(t) >= 3);
  expect(pings(onSlow.text())).toBe(0);
});
