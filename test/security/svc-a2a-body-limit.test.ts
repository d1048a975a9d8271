/**
 * Oversized and malformed bodies on svc's A2A listener: over 64 KiB is refused 413 (from the
 * declared length, and for a chunked body while reading), broken JSON 400, all as JSON errors,
 * never a 500, and no task is minted; a JSON-RPC batch (an array) is JSON-RPC's own -32600 with id
 * null (D340).
 */
import { beforeAll, expect, test } from "bun:test";
import { daemonScope } from "../support/daemon-scope.ts";
import { A2A_SECRET, type A2aDaemon, startA2aDaemon } from "../support/a2a-daemon.ts";

const scope = daemonScope({ per: "file" });
let served: A2aDaemon;
beforeAll(async () => {
  served = await startA2aDaemon(scope, []);
});

const post = (body: string | ReadableStream<Uint8Array>) =>
  fetch(`${served.a2aUrl}/a2a`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${A2A_SECRET}` },
    body,
  });

function hugeSend(): string {
  const text = "x".repeat(70 * 1024);
  return JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "message/send",
    params: { message: { kind: "message", messageId: "m", role: "user", parts: [{ kind: "text", text }] } },
  });
}

test("a body over 64 KiB is refused 413", async () => {
  const answer = await post(hugeSend());
  expect(answer.status).toBe(413);
  expect(answer.headers.get("content-type")).toContain("application/json");
});

test("a chunked body over 64 KiB is refused 413 while reading", async () => {
  const bytes = new TextEncoder().encode(hugeSend());
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let offset = 0; offset < bytes.length; offset += 8192)
        controller.enqueue(bytes.slice(offset, offset + 8192));
      controller.close();
    },
  });
  const answer = await post(stream);
  expect(answer.status).toBe(413);
});

test("a JSON-RPC batch (a JSON array, empty or not) is one -32600 error with id null, as JSON-RPC 2.0 answers it", async () => {
  const send = {
    jsonrpc: "2.0",
    id: 7,
    method: "message/send",
    params: { message: { kind: "message", messageId: "m", role: "user", parts: [{ kind: "text", text: "hi" }] } },
  };
  for (const batch of ["[]", JSON.stringify([send]), JSON.stringify([send, { ...send, id: 8 }])]) {
    const answer = await post(batch);
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toContain("application/json");
    const body = (await answer.json()) as { jsonrpc: string; id: unknown; error: { code: number; message: string } };
    expect(body).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } });
    expect(body.error.message).toContain("batch");
  }
});

test("broken JSON is refused 400 before JSON-RPC", async () => {
  const broken = await post('{"jsonrpc":"2.0",');
  expect(broken.status).toBe(400);
  expect(broken.headers.get("content-type")).toContain("application/json");
});

test("a deeply nested body is refused 400 as a JSON error, not a crash", async () => {
  let nested: unknown = "x";
  for (let depth = 0; depth < 500; depth++) nested = { a: nested };
  const answer = await post(
    JSON.stringify({ jsonrpc: "2.0", id: 2, method: "message/send", params: { message: nested } }),
  );
  expect(answer.status).toBe(400);
  expect(answer.headers.get("content-type")).toContain("application/json");
});
