/**
 * Browser attacks on the attach listener (CSRF): writes from another origin, the `null` origin,
 * lookalike and malformed origins, and the content types a page can send without a preflight
 * (form, multipart, text/plain, none) on every write route and method. Each is refused (403 for
 * the origin, 415 for the media type) before it changes anything; reads grant no CORS access.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type InProcessAgent, startInProcessAgent } from "../support/in-process-agent.ts";
import {
  type AttackCase,
  type TenantDaemon,
  caseProblems,
  drain,
  startTenantDaemon,
} from "../support/tenant-daemon.ts";

const TOKEN = "s3cret-token-for-tests";
let guarded: InProcessAgent;
let tenant: TenantDaemon;
beforeAll(async () => {
  [guarded, tenant] = await Promise.all([
    startInProcessAgent({
      args: ["--attach-token=SPAR_TEST_TOKEN", "--attach-listen=0.0.0.0:0"],
      env: { SPAR_TEST_TOKEN: TOKEN },
    }),
    startTenantDaemon(),
  ]);
  expect(
    (await tenant.send({ method: "POST", path: "/sessions", as: "alice", body: { sessionID: "alices" } })).status,
  ).toBe(201);
});
afterAll(async () => {
  await Promise.all([guarded.stop(), tenant.stop()]);
});

async function call(
  daemon: InProcessAgent,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Response> {
  return fetch(`${daemon.baseUrl}${path}`, init);
}

const inject = { method: "POST", body: JSON.stringify({ message: "hi" }) };
const json = { "content-type": "application/json" };

describe("CSRF guard", () => {
  const withToken = { "x-attach-token": TOKEN, ...json };
  test("cross-origin and null origins are refused 403; loopback, same-host and no origin pass", async () => {
    const evil = await call(guarded, "/sessions/default/inject", {
      ...inject,
      headers: { ...withToken, origin: "https://evil.example" },
    });
    expect(evil.status).toBe(403);
    expect(((await evil.json()) as { error: string }).error).toContain("cross-origin");
    expect(
      (await call(guarded, "/sessions/default/inject", { ...inject, headers: { ...withToken, origin: "null" } }))
        .status,
    ).toBe(403);
    expect(
      (
        await call(guarded, "/sessions/default/inject", {
          ...inject,
          headers: { ...withToken, origin: "http://localhost:3000" },
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await call(guarded, "/sessions/default/inject", {
          ...inject,
          headers: { ...withToken, origin: "http://[::1]:9" },
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await call(guarded, "/sessions/default/inject", {
          ...inject,
          headers: { ...withToken, origin: "http://127.8.9.10" },
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await call(guarded, "/sessions/default/inject", {
          ...inject,
          headers: { ...withToken, origin: `http://127.0.0.1:${guarded.port}`, host: `127.0.0.1:${guarded.port}` },
        })
      ).status,
    ).toBe(200);
    expect((await call(guarded, "/sessions/default/inject", { ...inject, headers: withToken })).status).toBe(200);
  });

  test("writes without Content-Type: application/json are refused 415, with a body or without", async () => {
    expect(
      (await call(guarded, "/sessions/default/wake", { method: "POST", headers: { "x-attach-token": TOKEN } })).status,
    ).toBe(415);
    expect(
      (
        await call(guarded, "/sessions/default/inject", {
          ...inject,
          headers: { "x-attach-token": TOKEN, "content-type": "text/plain" },
        })
      ).status,
    ).toBe(415);
    expect(
      (
        await call(guarded, "/sessions/default/inject", {
          ...inject,
          headers: { "x-attach-token": TOKEN, "content-type": "application/json; charset=utf-8" },
        })
      ).status,
    ).toBe(200);
  });
});

describe("origins and content types", () => {
  const write = { method: "POST", path: "/sessions/alices/inject", as: "alice", body: { message: "x" } } as const;
  const cases: AttackCase[] = [
    { ...write, name: "a cross-origin write is refused 403", headers: { origin: "https://evil.example" }, expect: 403 },
    { ...write, name: "a write from the null origin is refused 403", headers: { origin: "null" }, expect: 403 },
    {
      ...write,
      name: "a write from NULL (capitals, padded) is refused 403",
      headers: { origin: " NULL " },
      expect: 403,
    },
    { ...write, name: "a write from a malformed origin is refused 403", headers: { origin: "::::" }, expect: 403 },
    {
      ...write,
      name: "a write from a localhost lookalike origin is refused 403",
      headers: { origin: "http://localhost.evil.example" },
      expect: 403,
    },
    {
      ...write,
      name: "a write from a 127.0.0.1 lookalike origin is refused 403",
      headers: { origin: "http://127.0.0.1.evil.example" },
      expect: 403,
    },
    {
      ...write,
      name: "a write from an origin hiding evil.example behind 127.0.0.1@ is refused 403",
      headers: { origin: "http://127.0.0.1@evil.example" },
      expect: 403,
    },
    { ...write, name: "a write from a file:// origin is refused 403", headers: { origin: "file://" }, expect: 403 },
    {
      ...write,
      name: "a write from a loopback origin passes (200)",
      body: { message: "ok" },
      headers: { origin: "http://127.0.0.1:1" },
      expect: 200,
    },
    {
      ...write,
      name: "a write without a content type is refused 415",
      contentType: null,
      raw: '{"message":"x"}',
      expect: 415,
    },
    {
      ...write,
      name: "a write as text/plain is refused 415",
      contentType: "text/plain",
      raw: '{"message":"x"}',
      expect: 415,
    },
    {
      ...write,
      name: "a write as text/plain naming application/json in a parameter is refused 415",
      contentType: "text/plain; application/json",
      raw: '{"message":"x"}',
      expect: 415,
    },
    {
      ...write,
      name: "a write as multipart/form-data is refused 415",
      contentType: "multipart/form-data; boundary=x",
      raw: '--x\r\nContent-Disposition: form-data; name="message"\r\n\r\nx\r\n--x--\r\n',
      expect: 415,
    },
    {
      ...write,
      name: "a write as application/json-patch+json is refused 415",
      contentType: "application/json-patch+json",
      raw: '{"message":"x"}',
      expect: 415,
    },
    {
      ...write,
      name: "a write as application/jsonx is refused 415",
      contentType: "application/jsonx",
      raw: '{"message":"x"}',
      expect: 415,
    },
    {
      name: "a body-less write without a content type is refused 415",
      method: "POST",
      path: "/sessions/alices/wake",
      as: "alice",
      contentType: null,
      expect: 415,
    },
    {
      name: "a DELETE without a content type is refused 415",
      method: "DELETE",
      path: "/sessions/alices",
      as: "alice",
      contentType: null,
      expect: 415,
    },
    {
      name: "a form-encoded session create is refused 415",
      method: "POST",
      path: "/sessions",
      as: "alice",
      contentType: "application/x-www-form-urlencoded",
      raw: "a=b",
      expect: 415,
    },
    {
      name: "a form-encoded mode change to yolo is refused 415",
      method: "POST",
      path: "/sessions/alices/perms/mode",
      as: "alice",
      contentType: "application/x-www-form-urlencoded",
      raw: "mode=yolo",
      expect: 415,
    },
    {
      name: "a cross-origin ACL PATCH is refused 403",
      method: "PATCH",
      path: "/sessions/alices/acl",
      as: "alice",
      body: { viewers: ["eve"] },
      headers: { origin: "https://evil.example" },
      expect: 403,
    },
    {
      name: "a cross-origin DELETE is refused 403",
      method: "DELETE",
      path: "/sessions/alices",
      as: "alice",
      headers: { origin: "https://evil.example" },
      expect: 403,
    },
    {
      name: "a cross-origin peer registration is refused 403",
      method: "POST",
      path: "/peers",
      as: "alice",
      body: { name: "p", endpoint: "https://p.example" },
      headers: { origin: "https://evil.example" },
      expect: 403,
    },
  ];
  for (const attack of cases) {
    test(attack.name, async () => {
      expect(await caseProblems(tenant, attack)).toEqual([]);
    });
  }

  test("every write route, in both path shapes, refuses a cross-origin write 403 and a text/plain one 415; nothing changed", async () => {
    const suffixes = [
      "inject",
      "wake",
      "interrupt",
      "pause",
      "resume",
      "perms/respond",
      "perms/mode",
      "perms/allow",
      "perms/deny",
      "guardrails/reset",
      "pricing/set",
      "pricing/refresh",
      "reload",
      "slash/compact",
      "title",
      "slash/done",
      "slash/btw",
      "slash/subagent",
      "slash/replan",
      "agents/helper/stop",
    ];
    const problems: string[] = [];
    for (const base of ["/sessions/alices", "/sessions/spar/alices"]) {
      for (const suffix of suffixes) {
        const evil = await tenant.send({
          method: "POST",
          path: `${base}/${suffix}`,
          as: "alice",
          body: { mode: "yolo", patterns: ["*"], message: "x" },
          headers: { origin: "https://evil.example" },
        });
        const plain = await tenant.send({
          method: "POST",
          path: `${base}/${suffix}`,
          as: "alice",
          contentType: "text/plain",
          raw: '{"mode":"yolo"}',
        });
        await Promise.all([drain(evil), drain(plain)]);
        if (evil.status !== 403) problems.push(`${base}/${suffix} cross-origin: ${evil.status}`);
        if (plain.status !== 415) problems.push(`${base}/${suffix} text/plain: ${plain.status}`);
      }
    }
    expect(problems).toEqual([]);
    const perms = (await (await tenant.send({ path: "/sessions/alices/perms", as: "alice" })).json()) as {
      mode: string;
    };
    expect(perms.mode).toBe("ask");
    const status = (await (await tenant.send({ path: "/sessions/alices/status", as: "alice" })).json()) as {
      state: string;
    };
    expect(status.state).not.toBe("paused");
  });

  test("a cross-origin read gets no CORS allowance: no Access-Control-Allow-* header on answers or refusals", async () => {
    for (const path of ["/sessions", "/sessions/alices/status", "/sessions/alices/acl", "/whoami", "/nope"]) {
      const response = await tenant.send({ path, as: "alice", headers: { origin: "https://evil.example" } });
      await drain(response);
      const cors = [...response.headers.keys()].filter((name) => name.startsWith("access-control-"));
      expect([path, cors]).toEqual([path, []]);
    }
  });

  test("a preflight (OPTIONS) from another origin gets no CORS allowance, so a page cannot send JSON writes", async () => {
    const response = await fetch(`${tenant.daemon.baseUrl}/sessions/alices/inject`, {
      method: "OPTIONS",
      headers: {
        origin: "https://evil.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type, x-attach-token",
      },
    });
    await drain(response);
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect([...response.headers.keys()].filter((name) => name.startsWith("access-control-"))).toEqual([]);
  });
});
