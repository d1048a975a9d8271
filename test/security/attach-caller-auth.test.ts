/**
 * Attacks on the per-caller layer (multi-session auth with a token table, a proxy identity and an
 * admin): unknown, missing, forged and doubled caller tokens, identity assertions from callers
 * that are no proxy, empty assertions, and identity claims outside the verified token. Each is
 * refused 401; a proxy asserting a caller gets exactly that caller's rights.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import {
  type AttackCase,
  type TenantDaemon,
  caseProblems,
  errorOf,
  startTenantDaemon,
} from "../support/tenant-daemon.ts";

let tenant: TenantDaemon;
beforeAll(async () => {
  tenant = await startTenantDaemon();
  expect(
    (await tenant.send({ method: "POST", path: "/sessions", as: "alice", body: { sessionID: "alices" } })).status,
  ).toBe(201);
});
afterAll(async () => {
  await tenant.stop();
});

const cases: AttackCase[] = [
  {
    name: "an unknown caller token is refused 401",
    path: "/whoami",
    headers: { authorization: "Bearer forged" },
    expect: 401,
  },
  { name: "no caller token on a multi-session daemon is refused 401", path: "/sessions", as: "none", expect: 401 },
  {
    name: "alice's token with one character changed is refused 401",
    path: "/whoami",
    headers: { authorization: "Bearer tok-alicf" },
    expect: 401,
  },
  {
    name: "an assertion from a caller that is no proxy is refused 401",
    path: "/whoami",
    as: "alice",
    headers: { "x-asserted-caller": "root" },
    expect: 401,
  },
  {
    name: "an assertion from an admin that is no proxy is refused 401",
    path: "/whoami",
    as: "root",
    headers: { "x-asserted-caller": "alice" },
    expect: 401,
  },
  {
    name: "an empty assertion from the proxy is refused 401",
    path: "/whoami",
    as: "gw",
    headers: { "x-asserted-caller": " " },
    expect: 401,
  },
  {
    name: "the proxy asserting alice reads her session (200)",
    path: "/sessions/alices/status",
    as: "gw",
    headers: { "x-asserted-caller": "alice" },
    expect: 200,
  },
  {
    name: "the proxy itself cannot read alice's session: masked 404",
    path: "/sessions/alices/status",
    as: "gw",
    expect: 404,
  },
  {
    name: "the proxy asserting bob cannot read alice's session: masked 404",
    path: "/sessions/alices/status",
    as: "gw",
    headers: { "x-asserted-caller": "bob" },
    expect: 404,
  },
  {
    name: "an assertion without any caller token is refused 401",
    path: "/whoami",
    headers: { "x-asserted-caller": "root" },
    as: "none",
    expect: 401,
  },
  {
    name: "an assertion with the transport token as bearer is refused 401",
    path: "/whoami",
    headers: { "x-asserted-caller": "alice", "x-attach-token": "", authorization: "Bearer transport-token" },
    as: "none",
    expect: 401,
  },
];
for (const attack of cases) {
  test(attack.name, async () => {
    expect(await caseProblems(tenant, attack)).toEqual([]);
  });
}

test("the proxy asserting an identity the daemon itself uses is refused 401 naming why (D328)", async () => {
  for (const identity of ["local", "anonymous", "svc-attach", "svc-inject", "svc:internal", "mast:ui", "spar:x"]) {
    const response = await tenant.send({ path: "/whoami", as: "gw", headers: { "x-asserted-caller": identity } });
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBe('Bearer realm="attach-multisession"');
    expect(await errorOf(response)).toContain("x-asserted-caller is refused:");
  }
  // The control: the same proxy asserting an ordinary identity is served.
  const bob = await tenant.send({ path: "/whoami", as: "gw", headers: { "x-asserted-caller": "bob" } });
  expect(await bob.json()).toMatchObject({ identity: "bob", source: "asserted" });
});

test("two Authorization headers (alice's token twice) are refused 401: one header names one caller", async () => {
  const response = await fetch(`${tenant.daemon.baseUrl}/whoami`, {
    headers: new Headers([
      ["x-attach-token", "transport-token"],
      ["authorization", "Bearer tok-alice"],
      ["authorization", "Bearer tok-root"],
    ]),
  });
  expect(response.status).toBe(401);
  expect(response.headers.get("www-authenticate")).toBe('Bearer realm="attach-multisession"');
});

test("identity claims in the query, a cookie or X-Forwarded-User do not change who the caller is", async () => {
  const response = await tenant.send({
    path: "/whoami?identity=root&admin=true",
    as: "alice",
    headers: { cookie: "identity=root", "x-forwarded-user": "root", "x-remote-user": "root" },
  });
  expect(response.status).toBe(200);
  expect(await response.json()).toEqual({ identity: "alice", admin: false, source: "bearer" });
});

test("a session created by a proxied caller is owned by the asserted caller, not the proxy", async () => {
  const created = await tenant.send({
    method: "POST",
    path: "/sessions",
    as: "gw",
    headers: { "x-asserted-caller": "bob" },
    body: { sessionID: "bobs-via-proxy" },
  });
  expect(created.status).toBe(201);
  expect(((await created.json()) as { user: string }).user).toBe("bob");
  expect((await tenant.send({ path: "/sessions/bobs-via-proxy/status", as: "gw" })).status).toBe(404);
  expect((await tenant.send({ path: "/sessions/bobs-via-proxy/status", as: "bob" })).status).toBe(200);
});
