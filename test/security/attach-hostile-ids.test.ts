/**
 * Hostile session ids, app names and paths against a fully gated daemon: dot-dot, encoded slashes
 * and dots, NUL, bidi overrides, emoji, 10 KB ids, dot segments sent raw, unknown paths and
 * methods. Each is a 404 (405 for a wrong method, 400 for an id a session cannot have), never
 * another caller's session, never a 500; the daemon keeps serving.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rawHttp } from "../support/raw-http.ts";
import {
  type AttackCase,
  type TenantDaemon,
  caseProblems,
  startTenantDaemon,
  tenantHeaders,
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

const long = "x".repeat(10_000);
const ids = ["..", "%2e%2e", "a%2Fb", "%00", "%E2%80%AE", encodeURIComponent("😀"), long, "a b", "default%00"];
const shown = (id: string) => JSON.stringify(decodeURIComponent(id).slice(0, 12));
const cases: AttackCase[] = [
  ...ids.map(
    (id): AttackCase => ({
      name: `the status of id ${shown(id)} is a 404`,
      path: `/sessions/${id}/status`,
      as: "alice",
      expect: 404,
    }),
  ),
  ...ids.slice(0, 4).map(
    (id): AttackCase => ({
      name: `an inject into id ${shown(id)} is a 404`,
      method: "POST",
      path: `/sessions/${id}/inject`,
      as: "alice",
      body: { message: "x" },
      expect: 404,
    }),
  ),
  {
    name: "creating a session with a slash in its id is refused 400",
    method: "POST",
    path: "/sessions",
    as: "alice",
    body: { sessionID: "a/b" },
    expect: 400,
  },
  {
    name: "creating a session with the id .. is refused 400",
    method: "POST",
    path: "/sessions",
    as: "alice",
    body: { sessionID: ".." },
    expect: 400,
  },
  {
    name: "creating a session with a NUL in its id is refused 400",
    method: "POST",
    path: "/sessions",
    as: "alice",
    body: { sessionID: "a\u0000b" },
    expect: 400,
  },
  {
    name: "creating a session with a newline in its id is refused 400",
    method: "POST",
    path: "/sessions",
    as: "alice",
    body: { sessionID: "a\nevent: x" },
    expect: 400,
  },
  {
    name: "creating a session with a leading dot is refused 400",
    method: "POST",
    path: "/sessions",
    as: "alice",
    body: { sessionID: ".hidden" },
    expect: 400,
  },
  {
    name: "creating a session with a 129-character id is refused 400",
    method: "POST",
    path: "/sessions",
    as: "alice",
    body: { sessionID: "a".repeat(129) },
    expect: 400,
  },
  {
    name: "creating a session in the app ../x is refused 400",
    method: "POST",
    path: "/sessions",
    as: "alice",
    body: { app: "../x", sessionID: "ok" },
    expect: 400,
  },
  { name: "an unknown path is a 404", path: "/admin", as: "alice", expect: 404 },
  { name: "PUT on inject is a 405", method: "PUT", path: "/sessions/alices/inject", as: "alice", expect: 405 },
  {
    name: "an encoded slash does not split alice's id into a route: 405, as GET on any bare session URL",
    path: "/sessions/alices%2Fstatus",
    as: "alice",
    expect: 405,
  },
  {
    name: "an app segment of .. does not reach alice's session for bob: 404",
    path: "/sessions/../alices/status",
    as: "bob",
    expect: 404,
  },
];
for (const attack of cases) {
  test(attack.name, async () => {
    expect(await caseProblems(tenant, attack)).toEqual([]);
  });
}

test("dot segments sent raw (not normalized by a client) never reach alice's session for bob: 404 or 405", async () => {
  const headers = Object.entries(tenantHeaders({ as: "bob", contentType: null }))
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  for (const path of [
    "/sessions/bobs/../alices/status",
    "/sessions/./alices/status",
    "/sessions/spar/alices/./status",
    "/sessions/%2e%2e/alices/status",
    "/sessions//alices/status",
    "/sessions/alices/status/..",
    "/sessions/alices/status%00",
  ]) {
    const answer = await rawHttp(
      tenant.daemon.port,
      `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${tenant.daemon.port}\r\n${headers}Connection: close\r\n\r\n`,
    );
    expect([path, answer.status === 404 || answer.status === 405]).toEqual([path, true]);
    expect(answer.headers["content-type"]).toContain("application/json");
  }
  const owner = await tenant.send({ path: "/sessions/alices/status", as: "alice" });
  expect(owner.status).toBe(200);
});
