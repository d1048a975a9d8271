/**
 * Request smuggling and framing attacks on the attach listener, sent as raw bytes over one socket:
 * Content-Length with Transfer-Encoding (both orders), duplicate or malformed lengths, unknown and
 * repeated codings, obs-fold, bare LF and CR, NUL, oversized and prefixed chunk sizes, unknown HTTP
 * versions, a request hidden in a GET's body. Each ambiguous message is refused (400 or 505) with
 * the connection closed, and the request smuggled behind it (a pause with a unique reason) never
 * runs: the session is not paused afterwards.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Daemon, startDaemon } from "../support/daemon.ts";
import { type RawExchange, rawExchange } from "../support/raw-socket.ts";

let daemon: Daemon;
let host = "";
beforeAll(async () => {
  daemon = await startDaemon({});
  host = `Host: 127.0.0.1:${daemon.port}`;
});
afterAll(async () => {
  await daemon.sigterm();
});

let smuggled = 0;
/** A complete request that would park the default session with a unique reason if it ran. */
function smuggle(): string {
  const body = JSON.stringify({ reason: `SMUGGLED-${++smuggled}` });
  return `POST /sessions/default/pause HTTP/1.1\r\n${host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
}

/** The head of a body-less write that is harmless if it runs (an idle wake). */
const wakeHead = () => `POST /sessions/default/wake HTTP/1.1\r\n${host}\r\nContent-Type: application/json\r\n`;

async function expectNothingSmuggled(): Promise<void> {
  const status = (await (await fetch(`${daemon.baseUrl}/sessions/default/status`)).json()) as {
    state: string;
    pause_reason?: string;
  };
  expect(status.pause_reason ?? "").not.toContain("SMUGGLED");
  expect(status.state).not.toBe("paused");
}

/** Refused with `status`, one answer only, the connection closed, nothing smuggled ran. */
async function expectRefused(exchange: RawExchange, status: number): Promise<void> {
  expect(exchange.statuses).toEqual([status]);
  expect(exchange.closedByServer).toBe(true);
  await expectNothingSmuggled();
}

const refusals: Array<[string, () => string, number]> = [
  [
    "Content-Length with Transfer-Encoding: chunked (CL.TE) is refused 400",
    () => `${wakeHead()}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${smuggle()}`,
    400,
  ],
  [
    "Transfer-Encoding: chunked then Content-Length (TE.CL) is refused 400",
    () => `${wakeHead()}Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n5c\r\n${smuggle()}\r\n0\r\n\r\n`,
    400,
  ],
  [
    "two different Content-Length headers are refused 400",
    () => `${wakeHead()}Content-Length: 0\r\nContent-Length: 10\r\n\r\n${smuggle()}`,
    400,
  ],
  ["a Content-Length list (0, 5) is refused 400", () => `${wakeHead()}Content-Length: 0, 5\r\n\r\n${smuggle()}`, 400],
  ["a signed Content-Length (+0) is refused 400", () => `${wakeHead()}Content-Length: +0\r\n\r\n${smuggle()}`, 400],
  [
    "a Content-Length past 64 bits is refused 400",
    () => `${wakeHead()}Content-Length: 99999999999999999999999\r\n\r\n${smuggle()}`,
    400,
  ],
  [
    "Transfer-Encoding: xchunked (an unknown coding) is refused 400",
    () => `${wakeHead()}Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n${smuggle()}`,
    400,
  ],
  [
    "Transfer-Encoding: chunked, identity is refused 400",
    () => `${wakeHead()}Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n${smuggle()}`,
    400,
  ],
  [
    "two Transfer-Encoding headers are refused 400",
    () => `${wakeHead()}Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n${smuggle()}`,
    400,
  ],
  [
    "a Transfer-Encoding folded onto a continuation line (obs-fold) is refused 400",
    () => `${wakeHead()}Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n${smuggle()}`,
    400,
  ],
  [
    "an obs-fold continuation of any header is refused 400",
    () => `GET /healthz HTTP/1.1\r\n${host}\r\nX-Folded: a\r\n b\r\n\r\n${smuggle()}`,
    400,
  ],
  [
    "a space before the colon of Content-Length is refused 400",
    () => `${wakeHead()}Content-Length : 0\r\n\r\n${smuggle()}`,
    400,
  ],
  [
    "a space before the colon of Transfer-Encoding is refused 400",
    () => `${wakeHead()}Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n${smuggle()}`,
    400,
  ],
  [
    "a header line ended by a bare LF is refused 400",
    () => `${wakeHead()}Content-Length: 0\nX-Hidden: y\r\n\r\n${smuggle()}`,
    400,
  ],
  [
    "bare LF line ends inside a chunked body are refused 400",
    () => `${wakeHead()}Transfer-Encoding: chunked\r\n\r\n2\n{}\n0\n\n${smuggle()}`,
    400,
  ],
  [
    "a bare CR inside a header value is refused 400",
    () => `GET /healthz HTTP/1.1\r\n${host}\r\nX-Split: a\rContent-Length: 5\r\n\r\n${smuggle()}`,
    400,
  ],
  [
    "a NUL inside a header value is refused 400",
    () => `GET /healthz HTTP/1.1\r\n${host}\r\nX-Nul: a\u0000b\r\n\r\n${smuggle()}`,
    400,
  ],
  [
    "a chunk size past 64 bits is refused 400",
    () => `${wakeHead()}Transfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nx\r\n0\r\n\r\n${smuggle()}`,
    400,
  ],
  [
    "a chunk size with a 0x prefix is refused 400",
    () => `${wakeHead()}Transfer-Encoding: chunked\r\n\r\n0x2\r\n{}\r\n0\r\n\r\n${smuggle()}`,
    400,
  ],
  ["a request line of HTTP/1.2 is refused 505", () => `GET /healthz HTTP/1.2\r\n${host}\r\n\r\n${smuggle()}`, 505],
  ["an HTTP/0.9 request line (no version) is refused 505", () => `GET /healthz\r\n\r\n${smuggle()}`, 505],
  [
    "a request whose lines all end in bare LF is refused 505",
    () => `GET /healthz HTTP/1.1\n${host}\n\n${smuggle()}`,
    505,
  ],
];
for (const [name, request, status] of refusals) {
  test(`${name}; the connection closes and the request smuggled behind it never runs`, async () => {
    await expectRefused(await rawExchange(daemon.port, request()), status);
  });
}

test("a GET whose body holds a second request is answered once; the body never runs as a request", async () => {
  const hidden = smuggle();
  const exchange = await rawExchange(
    daemon.port,
    `GET /healthz HTTP/1.1\r\n${host}\r\nContent-Length: ${hidden.length}\r\n\r\n${hidden}`,
  );
  expect(exchange.statuses).toEqual([200]);
  await expectNothingSmuggled();
});

test("a second Host header is refused (4xx) with a JSON error and the pause it carries never runs", async () => {
  const exchange = await rawExchange(
    daemon.port,
    `POST /sessions/default/pause HTTP/1.1\r\n${host}\r\nHost: evil.example\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`,
  );
  expect(exchange.statuses.length).toBe(1);
  expect(exchange.statuses[0]).toBeGreaterThanOrEqual(400);
  expect(exchange.statuses[0]).toBeLessThan(500);
  expect(typeof (JSON.parse(exchange.responses[0]?.body ?? "") as { error: unknown }).error).toBe("string");
  await expectNothingSmuggled();
});

test("a lower-case method is not served: no 2xx answer, nothing runs", async () => {
  const exchange = await rawExchange(
    daemon.port,
    `post /sessions/default/pause HTTP/1.1\r\n${host}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`,
  );
  expect(exchange.statuses.filter((status) => status < 300)).toEqual([]);
  await expectNothingSmuggled();
});

test("well-formed pipelined requests are answered in order, one answer each (control)", async () => {
  const exchange = await rawExchange(
    daemon.port,
    `GET /healthz HTTP/1.1\r\n${host}\r\n\r\nGET /nope HTTP/1.1\r\n${host}\r\nConnection: close\r\n\r\n`,
  );
  expect(exchange.statuses).toEqual([200, 404]);
  expect(exchange.responses[1]?.body).toContain("no such endpoint");
});

test("after every framing attack the listener still serves a fresh connection", async () => {
  const response = await fetch(`${daemon.baseUrl}/healthz`);
  expect(response.status).toBe(200);
  await expectNothingSmuggled();
  expect(smuggled).toBeGreaterThanOrEqual(refusals.length);
});
