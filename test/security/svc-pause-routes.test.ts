/**
 * Attacks on svc's pause routes, a real process: POST /pause, /extend-token and the token-keyed
 * POST /resume sit behind the shared guards (token, Host, CSRF, body limit), refuse reserved
 * `:mast-ops` ids, and treat the resume token as a secret: an unknown or guessed token learns
 * nothing (404 without echoing it), and a real one never reaches the log or the store in clear.
 */
import { beforeAll, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Daemon } from "../support/daemon.ts";
import { jsonRefusal, svcListenerPair } from "../support/svc-listener-pair.ts";
import { rawHttp } from "../support/raw-http.ts";
import { TOKEN_NOT_FOUND } from "../../src/svc/pause/resume-token.ts";

const daemons = svcListenerPair();
let open: Daemon;
let gated: Daemon;
beforeAll(() => {
  ({ open, gated } = daemons);
});

const AUTH = { authorization: "Bearer s3cret" };

const post = (daemon: Daemon, path: string, body: string, headers: Record<string, string> = {}) =>
  fetch(`${daemon.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });

const BODIES: Record<string, string> = {
  "/pause": '{"session_id":"incident-x","reason":"operator"}',
  "/extend-token": '{"token":"mrt_AAAAAAAAAAAAAAAAAAAAAA","ttl":"1h"}',
  "/resume": '{"token":"mrt_AAAAAAAAAAAAAAAAAAAAAA"}',
};

test("without the inject token /pause, /extend-token and a token resume are refused 401", async () => {
  for (const [path, body] of Object.entries(BODIES)) {
    expect(await jsonRefusal(await post(gated, path, body), 401)).toBe(
      "missing or wrong inject token: send the value of SVC_INJECT_TOKEN as Authorization: Bearer <token>",
    );
    expect(await jsonRefusal(await post(gated, path, body, { authorization: "Bearer s3cre" }), 401)).toBe(
      "missing or wrong inject token: send the value of SVC_INJECT_TOKEN as Authorization: Bearer <token>",
    );
  }
});

test("DNS rebinding and CSRF on the pause routes: a foreign Host is 421, a cross-origin browser write 403", async () => {
  for (const [path, body] of Object.entries(BODIES)) {
    const answer = await rawHttp(
      open.port,
      `POST ${path} HTTP/1.1\r\nHost: attacker.example:${open.port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    expect(answer.status).toBe(421);
    expect(await jsonRefusal(await post(open, path, body, { origin: "http://evil.example" }), 403)).toContain(
      "cross-origin request refused",
    );
  }
});

test("a body over 8 KiB is refused 413 and nesting past 64 levels 400 on every pause route", async () => {
  const long: Record<string, unknown> = {
    "/pause": { session_id: "incident-x", reason: "operator", message: "x".repeat(9000) },
    "/extend-token": { token: "x".repeat(9000), ttl: "1h" },
    "/resume": { token: "x".repeat(9000) },
  };
  for (const [path, body] of Object.entries(long))
    expect(await jsonRefusal(await post(open, path, JSON.stringify(body)), 413)).toContain("larger than 8192 bytes");
  const deep = `{"session_id":"incident-x","reason":"operator","metadata":{"a":${"[".repeat(100)}${"]".repeat(100)}}}`;
  expect(await jsonRefusal(await post(open, "/pause", deep), 400)).toContain("nested deeper than 64 levels");
});

test("a reserved :mast-ops id is refused 400 by /pause, and a token resume cannot be keyed to a session as well", async () => {
  expect(
    await jsonRefusal(await post(open, "/pause", '{"session_id":"incident-x:mast-ops","reason":"operator"}'), 400),
  ).toContain('reserved session ID "incident-x:mast-ops"');
  const both = '{"token":"mrt_AAAAAAAAAAAAAAAAAAAAAA","session_id":"incident-x:mast-ops","interrupt_id":"g"}';
  expect(await jsonRefusal(await post(open, "/resume", both), 400)).toContain("mutually exclusive");
});

test("a guessed token is 404 and the answer never echoes it; a pause on an unknown session is 404", async () => {
  for (const token of ["mrt_AAAAAAAAAAAAAAAAAAAAAA", "mrt_../../etc/passwd", "x".repeat(200)]) {
    const error = await jsonRefusal(await post(open, "/resume", JSON.stringify({ token })), 404);
    expect(error).toBe(TOKEN_NOT_FOUND);
    expect(error).toStartWith("resume token not found: no pause in this store minted it");
    const extend = await jsonRefusal(await post(open, "/extend-token", JSON.stringify({ token, ttl: "1h" })), 404);
    expect(extend).not.toContain(token);
  }
  expect(await jsonRefusal(await post(open, "/pause", '{"session_id":"incident-none","reason":"operator"}'), 404)).toBe(
    "session not found: incident-none",
  );
});

test("a real token appears only in the pause's answer: never in the daemon's log nor in its store files", async () => {
  expect((await post(gated, "/inject", '{"uid":"secret"}', AUTH)).status).toBe(202);
  const paused = await post(gated, "/pause", '{"session_id":"incident-secret","reason":"operator"}', AUTH);
  expect(paused.status).toBe(200);
  const token = ((await paused.json()) as { token: string }).token;
  expect((await post(gated, "/extend-token", JSON.stringify({ token, ttl: "2h" }), AUTH)).status).toBe(200);
  expect((await post(gated, "/resume", JSON.stringify({ token }), AUTH)).status).toBe(202);
  expect(gated.log()).not.toContain(token);
  const directory = dirname(gated.sessionDb);
  for (const file of readdirSync(directory))
    expect(readFileSync(join(directory, file)).includes(Buffer.from(token))).toBe(false);
});
