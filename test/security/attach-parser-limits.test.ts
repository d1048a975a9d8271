/**
 * The two refusals Bun 1.4.5's HTTP parser (uWS, in native code) makes before any JavaScript
 * runs, so no listener can answer them as JSON: an HTTP/1.1 request without `Host` (400) and a
 * request with more than 198 header fields (431, a compile-time count, whatever their size).
 * Bun.serve's `error` handler is not called for either and no option changes them. These tests
 * pin the bytes Bun sends today, on the real daemon's attach listener, beside what does reach the
 * daemon (an empty `Host:`, HTTP/1.0 without Host, 198 fields), so a Bun upgrade that changes
 * them fails here and docs/security.md ("Known limits") gets revisited.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Daemon, startDaemon } from "../support/daemon.ts";
import { rawExchange } from "../support/raw-socket.ts";

let daemon: Daemon;
beforeAll(async () => {
  daemon = await startDaemon({});
});
afterAll(async () => {
  await daemon.sigterm();
});

const BUN_400 = "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n";
const BUN_431 = "HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n";

/** `count` small header fields in all, `Host` first (about 12 bytes each: far under the 16 KiB size limit). */
function headWithFields(count: number): string {
  const fields = [`Host: 127.0.0.1:${daemon.port}`, "Connection: close"];
  for (let index = fields.length; index < count; index++) fields.push(`X-F${index}: v`);
  return `GET /healthz HTTP/1.1\r\n${fields.join("\r\n")}\r\n\r\n`;
}

test("an HTTP/1.1 request without Host is Bun's bodiless 400, the connection closed", async () => {
  const exchange = await rawExchange(daemon.port, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n");
  expect(exchange.text).toBe(BUN_400);
  expect(exchange.closedByServer).toBe(true);
  // Also with an Upgrade header (Bun 1.4.0 let that one through to fetch).
  const upgrade = await rawExchange(daemon.port, "GET /healthz HTTP/1.1\r\nUpgrade: x\r\nConnection: close\r\n\r\n");
  expect(upgrade.text).toBe(BUN_400);
});

test("what does reach the daemon is answered by it: an empty Host is a JSON 400, HTTP/1.0 without Host is served", async () => {
  const empty = await rawExchange(daemon.port, "GET /healthz HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n");
  expect(empty.statuses).toEqual([400]);
  expect(empty.responses[0]?.headers["content-type"]).toContain("application/json");
  expect(JSON.parse(empty.responses[0]?.body ?? "{}")).toHaveProperty("error");
  const probe = await rawExchange(daemon.port, "GET /healthz HTTP/1.0\r\n\r\n");
  expect(probe.statuses).toEqual([200]);
});

test("199 header fields are Bun's bodiless 431 (a count, not the size limit); 198 reach the daemon", async () => {
  const head = headWithFields(199);
  expect(head.length).toBeLessThan(4096);
  const refused = await rawExchange(daemon.port, head);
  expect(refused.text).toBe(BUN_431);
  expect(refused.closedByServer).toBe(true);
  const served = await rawExchange(daemon.port, headWithFields(198));
  expect(served.statuses).toEqual([200]);
});

test("no JavaScript runs for either: a bare Bun.serve's fetch and error handlers are never called", async () => {
  const seen: string[] = [];
  const bare = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (request) => {
      seen.push(`fetch ${new URL(request.url, "http://x").pathname}`);
      return new Response("ok");
    },
    error: (error) => {
      seen.push(`error ${error.message}`);
      return Response.json({ error: error.message }, { status: 500 });
    },
  });
  try {
    const port = Number(bare.port);
    expect((await rawExchange(port, "GET /no-host HTTP/1.1\r\nConnection: close\r\n\r\n")).text).toBe(BUN_400);
    const fields = Array.from({ length: 197 }, (_, index) => `X-F${index}: v`).join("\r\n");
    const crowded = `GET /crowded HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n${fields}\r\n\r\n`;
    expect((await rawExchange(port, crowded)).text).toBe(BUN_431);
    // The same server answers a request it does read, so the two above were refused, not lost.
    expect(
      (await rawExchange(port, "GET /read HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")).statuses,
    ).toEqual([200]);
    expect(seen).toEqual(["fetch /read"]);
  } finally {
    bare.stop(true);
  }
});
