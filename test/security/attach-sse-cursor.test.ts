/**
 * Attacks on the event stream's query and headers: garbage cursors in `since` and Last-Event-ID
 * (signs, exponents, hex, fractions, full-width digits, NUL, empty), garbage and incompatible
 * protocol versions in `protocol` and X-Attach-Protocol-Version. Each is refused before a stream
 * opens (400, 409 for another major) with a JSON error and the protocol header; a valid cursor
 * past the end serves a stream that replays nothing. Cursors longer than 15 digits are left to
 * issue 13's int64 change.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { waitFor } from "../support/daemon.ts";
import { type InProcessAgent, startInProcessAgent } from "../support/in-process-agent.ts";
import { rawSubscribe } from "../support/raw-sse.ts";
import { errorOf } from "../support/tenant-daemon.ts";

let daemon: InProcessAgent;
beforeAll(async () => {
  daemon = await startInProcessAgent();
});
afterAll(async () => {
  await daemon.stop();
});

const GARBAGE = [
  "-1",
  "abc",
  "1e3",
  "0x10",
  "1.5",
  "+1",
  "",
  "\uff11",
  "-0",
  "1\u0000",
  "NaN",
  "Infinity",
  "1 2",
  "1;2",
  "٣",
  "0b1",
];

async function refusal(
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; error: string; protocol: string | null }> {
  const response = await fetch(`${daemon.baseUrl}${path}`, { headers });
  const protocol = response.headers.get("x-attach-protocol-version");
  const status = response.status;
  return { status, error: await errorOf(response), protocol };
}

for (const cursor of GARBAGE) {
  test(`since=${JSON.stringify(cursor)} is refused 400 with a JSON error before any stream opens`, async () => {
    const answer = await refusal(`/sessions/default/events?since=${encodeURIComponent(cursor)}`);
    expect(answer).toEqual({
      status: 400,
      error: expect.stringContaining("since must be a non-negative") as unknown as string,
      protocol: "1.16.0",
    });
  });
}

test("every garbage Last-Event-ID is refused 400 with a JSON error", async () => {
  const accepted: string[] = [];
  // biome-ignore lint/suspicious/noControlCharactersInRegex: NUL and non-Latin-1 values cannot travel in a header.
  for (const cursor of GARBAGE.filter((value) => !/[\u0000\u0100-\uffff]/.test(value))) {
    const answer = await refusal("/sessions/default/events", { "last-event-id": cursor });
    // An empty header value is no value: a client that sends `Last-Event-ID:` resumes from 0.
    if (cursor === "" ? answer.status !== 200 && answer.status !== 400 : answer.status !== 400)
      accepted.push(`${JSON.stringify(cursor)}: ${answer.status}`);
  }
  expect(accepted).toEqual([]);
});

test("a garbage since is refused 400 even with a valid Last-Event-ID beside it", async () => {
  expect((await refusal("/sessions/default/events?since=x1", { "last-event-id": "1" })).status).toBe(400);
});

test("protocol=2.0 (another major) is refused 409 with the protocol header", async () => {
  const answer = await refusal("/sessions/default/events?protocol=2.0");
  expect([answer.status, answer.protocol]).toEqual([409, "1.16.0"]);
});

test("protocol=0.1.0 (an older major) is refused 409", async () => {
  expect((await refusal("/sessions/default/events?protocol=0.1.0")).status).toBe(409);
});

for (const declared of ["banana", "999999999999999999999.0.0", "<script>", "-1.0.0"]) {
  test(`protocol=${JSON.stringify(declared)} is refused 400 as malformed`, async () => {
    const answer = await refusal(`/sessions/default/events?protocol=${encodeURIComponent(declared)}`);
    expect([answer.status, answer.error.includes("malformed protocol version"), answer.protocol]).toEqual([
      400,
      true,
      "1.16.0",
    ]);
  });
}

test("X-Attach-Protocol-Version garbage is refused 400 and another major 409", async () => {
  expect((await refusal("/sessions/default/events", { "x-attach-protocol-version": "banana" })).status).toBe(400);
  expect((await refusal("/sessions/default/events", { "x-attach-protocol-version": "2.0.0" })).status).toBe(409);
});

test("a 10 KB protocol declaration is refused 400 and the error does not echo it whole", async () => {
  const answer = await refusal(`/sessions/default/events?protocol=${"9".repeat(10_000)}`);
  expect(answer.status).toBe(400);
  expect(answer.error.length).toBeLessThan(11_000);
});

test("a cursor past the end (15 digits) serves the stream and replays nothing (control)", async () => {
  const subscriber = rawSubscribe(daemon.port, "/sessions/default/events?since=999999999999999");
  expect(await subscriber.status).toBe(200);
  await waitFor(() => (subscriber.frames.length >= 3 ? true : undefined), 5000, "three frames");
  subscriber.close();
  expect(subscriber.frames.map((frame) => frame.event)).toEqual(["capabilities", "status-update", "usage-update"]);
});

test("a garbage since or limit on agent events reads from the start, never a 500", async () => {
  for (const cursor of ["abc", "-5", "1e400", "9".repeat(400)]) {
    const query = `since=${encodeURIComponent(cursor)}&limit=${encodeURIComponent(cursor)}`;
    const response = await fetch(`${daemon.baseUrl}/sessions/default/agents/helper/events?${query}`);
    // No subagent named helper here: the 404 that names what exists, read past the bad cursor.
    expect([cursor, response.status]).toEqual([cursor, 404]);
    expect(await response.json()).toMatchObject({ agent: "helper", available: [] });
  }
});
