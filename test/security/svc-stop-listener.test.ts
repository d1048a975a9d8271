/**
 * Attacks on `spar svc`'s POST /stop (a planned drain and exit: whoever reaches it can take the
 * daemon down), a real process: it rides the main listener's shared guards, so an unauthenticated
 * caller, a DNS-rebinding Host and a cross-origin browser write are each refused with a JSON
 * error and no drain starts.
 */
import { beforeAll, expect, test } from "bun:test";
import type { Daemon } from "../support/daemon.ts";
import { jsonRefusal, svcListenerPair } from "../support/svc-listener-pair.ts";
import { rawHttp } from "../support/raw-http.ts";

const daemons = svcListenerPair();
let open: Daemon;
let gated: Daemon;
beforeAll(() => {
  ({ open, gated } = daemons);
});

const stop = (daemon: Daemon, body: string, headers: Record<string, string> = {}) =>
  fetch(`${daemon.baseUrl}/stop`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });

test("an unauthenticated /stop (no, wrong or non-bearer token) is refused 401 by a listener with SVC_INJECT_TOKEN", async () => {
  expect(await jsonRefusal(await stop(gated, "{}"), 401)).toBe(
    "missing or wrong inject token: send the value of SVC_INJECT_TOKEN as Authorization: Bearer <token>",
  );
  expect(await jsonRefusal(await stop(gated, "{}", { authorization: "Bearer s3cre" }), 401)).toBe(
    "missing or wrong inject token: send the value of SVC_INJECT_TOKEN as Authorization: Bearer <token>",
  );
  expect(
    await jsonRefusal(await stop(gated, '{"pause_sessions":true}', { authorization: "Basic czNjcmV0" }), 401),
  ).toBe("missing or wrong inject token: send the value of SVC_INJECT_TOKEN as Authorization: Bearer <token>");
});

test("DNS rebinding: a /stop to a tokenless listener under a foreign Host is refused 421", async () => {
  const answer = await rawHttp(
    open.port,
    `POST /stop HTTP/1.1\r\nHost: attacker.example:${open.port}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
  );
  expect(answer.status).toBe(421);
  expect(answer.body).toContain("attacker.example");
});

test("CSRF: a cross-origin browser /stop is refused 403, a form-encoded one 415", async () => {
  expect(await jsonRefusal(await stop(open, "{}", { origin: "http://evil.example" }), 403)).toContain(
    "cross-origin request refused",
  );
  expect(
    await jsonRefusal(await stop(open, "reason=x", { "content-type": "application/x-www-form-urlencoded" }), 415),
  ).toContain("application/json");
  expect(
    await jsonRefusal(await stop(gated, "{}", { origin: "http://evil.example", authorization: "Bearer s3cret" }), 403),
  ).toContain("cross-origin request refused");
});

test("an unknown field or a body over 8 KiB is refused 400/413 before the drain", async () => {
  expect(await jsonRefusal(await stop(open, '{"force":true}'), 400)).toContain("unknown field");
  expect(await jsonRefusal(await stop(open, JSON.stringify({ reason: "x".repeat(9000) })), 413)).toBeString();
});

test("none of the attacks above started a drain: both daemons still run and serve", async () => {
  for (const daemon of [open, gated]) {
    expect(daemon.process.exitCode).toBeNull();
    expect(daemon.log()).not.toContain("stop requested");
    expect((await fetch(`${daemon.baseUrl}/healthz`)).status).toBe(200);
  }
});
