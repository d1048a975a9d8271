/**
 * Attacks on `spar svc`'s main listener, a real process: it runs on the shared guards, so each
 * attack the attach listener refuses is refused here too, with a JSON error, and runs no turn.
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

const post = (daemon: Daemon, body: string, headers: Record<string, string> = {}, path = "/inject") =>
  fetch(`${daemon.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });

/** The operator routes beside /inject: each attack on /inject is refused on them too. */
const RESET = "/sessions/incident-x/guardrails/reset";

test("DNS rebinding: a tokenless listener refuses a foreign Host (421)", async () => {
  const answer = await rawHttp(
    open.port,
    `POST /inject HTTP/1.1\r\nHost: attacker.example:${open.port}\r\nContent-Type: application/json\r\nContent-Length: 12\r\nConnection: close\r\n\r\n{"uid":"x1"}`,
  );
  expect(answer.status).toBe(421);
  expect(answer.body).toContain("attacker.example");
});

test("a missing, wrong or attach-style token is refused 401 by a listener with SVC_INJECT_TOKEN", async () => {
  expect(await jsonRefusal(await post(gated, '{"uid":"x"}'), 401)).toBe(
    "missing or wrong inject token: send the value of SVC_INJECT_TOKEN as Authorization: Bearer <token>",
  );
  expect(await jsonRefusal(await post(gated, '{"uid":"x"}', { authorization: "Bearer s3cre" }), 401)).toBe(
    "missing or wrong inject token: send the value of SVC_INJECT_TOKEN as Authorization: Bearer <token>",
  );
  expect(await jsonRefusal(await post(gated, '{"uid":"x"}', { authorization: "Basic czNjcmV0" }), 401)).toBe(
    "missing or wrong inject token: send the value of SVC_INJECT_TOKEN as Authorization: Bearer <token>",
  );
});

test("CSRF: a cross-origin browser write is refused 403, a form content type 415", async () => {
  expect(await jsonRefusal(await post(open, '{"uid":"x"}', { origin: "http://evil.example" }), 403)).toContain(
    "cross-origin request refused",
  );
  expect(
    await jsonRefusal(await post(open, "uid=x", { "content-type": "application/x-www-form-urlencoded" }), 415),
  ).toContain("application/json");
});

test("a body over 8 KiB is refused 413, nesting past 64 levels 400, an unknown field 400", async () => {
  expect(await jsonRefusal(await post(open, JSON.stringify({ message: "x".repeat(9000) })), 413)).toContain(
    "larger than 8192 bytes",
  );
  expect(await jsonRefusal(await post(open, `{"context":${"[".repeat(100)}${"]".repeat(100)}}`), 400)).toContain(
    "nested deeper than 64 levels",
  );
  expect(await jsonRefusal(await post(open, '{"uid":"x","approver":"admin"}'), 400)).toBe(
    'invalid request body: field "approver": unknown field',
  );
});

test("a reserved :mast-ops id and an id no session can carry are refused 400", async () => {
  expect(await jsonRefusal(await post(open, '{"uid":"ops:mast-ops"}'), 400)).toContain("reserved session ID");
  expect(await jsonRefusal(await post(open, '{"uid":"../../etc"}'), 400)).toContain(
    'derives session ID "incident-../../etc"',
  );
});

test("POST /abort, /resume, /ack-effects and a guardrail reset without the inject token are refused 401 before any session is looked up", async () => {
  for (const path of ["/abort", "/resume", "/ack-effects", RESET]) {
    expect(await jsonRefusal(await post(gated, '{"session_id":"incident-x"}', {}, path), 401)).toBe(
      "missing or wrong inject token: send the value of SVC_INJECT_TOKEN as Authorization: Bearer <token>",
    );
    expect(
      await jsonRefusal(await post(gated, '{"session_id":"incident-x"}', { authorization: "Bearer s3cre" }, path), 401),
    ).toBe("missing or wrong inject token: send the value of SVC_INJECT_TOKEN as Authorization: Bearer <token>");
  }
});

test("DNS rebinding and CSRF on /abort, /resume and /ack-effects: a foreign Host is 421, a cross-origin browser write 403", async () => {
  const bodies: Record<string, string> = {
    "/abort": '{"session_id":"incident-x"}',
    "/ack-effects": '{"session_id":"incident-x"}',
    "/resume": '{"session_id":"incident-x","interrupt_id":"gate-1","response":{"verdict":"approve"}}',
  };
  for (const [path, body] of Object.entries(bodies)) {
    const answer = await rawHttp(
      open.port,
      `POST ${path} HTTP/1.1\r\nHost: attacker.example:${open.port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    expect(answer.status).toBe(421);
    expect(await jsonRefusal(await post(open, body, { origin: "http://evil.example" }, path), 403)).toContain(
      "cross-origin request refused",
    );
  }
});

test("/abort: a reserved :mast-ops id is 400; a body over 8 KiB 413, nesting past 64 levels 400, an unknown field 400", async () => {
  expect(await jsonRefusal(await post(open, '{"session_id":"incident-x:mast-ops"}', {}, "/abort"), 400)).toContain(
    'reserved session ID "incident-x:mast-ops"',
  );
  const long = JSON.stringify({ session_id: "incident-x", reason: "x".repeat(9000) });
  expect(await jsonRefusal(await post(open, long, {}, "/abort"), 413)).toContain("larger than 8192 bytes");
  const deep = `{"session_id":"incident-x","reason":${"[".repeat(100)}${"]".repeat(100)}}`;
  expect(await jsonRefusal(await post(open, deep, {}, "/abort"), 400)).toContain("nested deeper than 64 levels");
  expect(await jsonRefusal(await post(open, '{"session_id":"incident-x","approver":"admin"}', {}, "/abort"), 400)).toBe(
    'invalid request body: field "approver": unknown field',
  );
});

test("/resume and /ack-effects: a reserved :mast-ops id is 400, an approver field in the body 400 (the approver is never the client's)", async () => {
  const resume = { session_id: "incident-x:mast-ops", interrupt_id: "gate-1", response: { verdict: "approve" } };
  expect(await jsonRefusal(await post(open, JSON.stringify(resume), {}, "/resume"), 400)).toContain("reserved");
  expect(
    await jsonRefusal(await post(open, '{"session_id":"incident-x:mast-ops"}', {}, "/ack-effects"), 400),
  ).toContain("reserved session ID");
  const asserted = { session_id: "incident-x", interrupt_id: "gate-1", response: {}, approver: "admin" };
  expect(await jsonRefusal(await post(open, JSON.stringify(asserted), {}, "/resume"), 400)).toContain("approver");
});

test("guardrail reset: a reserved :mast-ops id in the path is 400, a body over 8 KiB 413", async () => {
  expect(
    await jsonRefusal(await post(open, "{}", {}, "/sessions/incident-x:mast-ops/guardrails/reset"), 400),
  ).toContain("reserved session ID");
  const long = JSON.stringify({ guardrail: "all", note: "x".repeat(9000) });
  expect(await jsonRefusal(await post(open, long, {}, RESET), 413)).toContain("larger than 8192 bytes");
});

test("none of the attacks above ran a turn on either daemon", async () => {
  for (const daemon of [open, gated]) {
    const metrics = await (
      await fetch(`${daemon.baseUrl}/metrics`, { headers: { authorization: "Bearer s3cret" } })
    ).text();
    expect(metrics).toContain("# TYPE svc_turns_total counter");
    expect(metrics).not.toContain("svc_turns_total{");
  }
});
