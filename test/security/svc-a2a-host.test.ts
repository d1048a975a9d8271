/**
 * DNS rebinding and CSRF on svc's A2A listener without a token (loopback only): a foreign Host is
 * refused 421 before the body is read, a cross-origin browser write 403, a form content type 415;
 * none of them mints a task.
 */
import { beforeAll, expect, test } from "bun:test";
import { daemonScope } from "../support/daemon-scope.ts";
import { rawHttp } from "../support/raw-http.ts";
import { type A2aDaemon, startA2aDaemon } from "../support/a2a-daemon.ts";

const scope = daemonScope({ per: "file" });
let open: A2aDaemon;
let port: number;
beforeAll(async () => {
  open = await startA2aDaemon(scope, [], { token: null });
  port = Number(new URL(open.a2aUrl).port);
});

const BODY = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "message/send",
  params: { message: { kind: "message", messageId: "m", role: "user", parts: [{ kind: "text", text: "x" }] } },
});

test("DNS rebinding: a foreign Host on /a2a is refused 421", async () => {
  const answer = await rawHttp(
    port,
    `POST /a2a HTTP/1.1\r\nHost: attacker.example:${port}\r\nContent-Type: application/json\r\nContent-Length: ${BODY.length}\r\nConnection: close\r\n\r\n${BODY}`,
  );
  expect(answer.status).toBe(421);
  expect(answer.body).toContain("attacker.example");
});

test("DNS rebinding: a foreign Host cannot read the card either (421)", async () => {
  const answer = await rawHttp(
    port,
    `GET /.well-known/agent-card.json HTTP/1.1\r\nHost: attacker.example\r\nConnection: close\r\n\r\n`,
  );
  expect(answer.status).toBe(421);
});

test("CSRF: a cross-origin browser send is refused 403", async () => {
  const answer = await fetch(`${open.a2aUrl}/a2a`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: "http://evil.example" },
    body: BODY,
  });
  expect(answer.status).toBe(403);
  expect(((await answer.json()) as { error: string }).error).toContain("cross-origin request refused");
});

test("CSRF: a text/plain send (a simple cross-site request) is refused 415", async () => {
  const answer = await fetch(`${open.a2aUrl}/a2a`, {
    method: "POST",
    headers: { "content-type": "text/plain" },
    body: BODY,
  });
  expect(answer.status).toBe(415);
});
