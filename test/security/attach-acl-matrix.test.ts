/**
 * Attacks on session authorization: every session route, in both path shapes, tried by a
 * stranger, a viewer, a contributor, the owner and an admin. A caller the ACL matrix denies gets
 * a 404 indistinguishable from a missing session's (same status, headers and error text but for
 * the id); a caller it allows is never answered that 404. Also: listing, deleting, and another
 * caller's sessions by name.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  type AttackCase,
  type CallerName,
  type TenantDaemon,
  caseProblems,
  drain,
  startTenantDaemon,
} from "../support/tenant-daemon.ts";

type Level = "read" | "write" | "admin";
interface SessionRoute {
  method: "GET" | "POST" | "PATCH";
  suffix: string;
  level: Level;
  /** A valid body: authorization is always reached (bodies are validated first). */
  body?: unknown;
}

/** Every session route but DELETE (below) and pricing/set, pricing/refresh (their rights are issue 13 item 5's). */
const ROUTES: SessionRoute[] = [
  ...[
    "events",
    "perms/stream",
    "status",
    "usage",
    "tools",
    "agents",
    "subagents",
    "agents/helper/events",
    "context",
    "memory",
    "skills",
    "mcp",
    "pricing",
    "perms",
    "guardrails",
  ].map((suffix): SessionRoute => ({ method: "GET", suffix, level: "read" })),
  { method: "GET", suffix: "acl", level: "admin" },
  { method: "POST", suffix: "inject", level: "write", body: { message: "matrix", wake: false } },
  { method: "POST", suffix: "wake", level: "write", body: {} },
  { method: "POST", suffix: "interrupt", level: "write", body: { hold: false } },
  { method: "POST", suffix: "pause", level: "write", body: { reason: "matrix" } },
  { method: "POST", suffix: "resume", level: "write", body: { mode: "continue" } },
  { method: "POST", suffix: "perms/respond", level: "write", body: { id: "matrix-none", decision: "deny" } },
  { method: "POST", suffix: "perms/deny", level: "write", body: { patterns: ["bash(matrix-never)"] } },
  { method: "POST", suffix: "perms/mode", level: "admin", body: { mode: "bogus" } },
  { method: "POST", suffix: "perms/allow", level: "admin", body: { patterns: ["((("] } },
  {
    method: "POST",
    suffix: "guardrails/reset",
    level: "write",
    body: { guardrail: "watchdog", additional_budget_usd: 1 },
  },
  { method: "POST", suffix: "reload", level: "write" },
  { method: "POST", suffix: "slash/compact", level: "write", body: {} },
  { method: "POST", suffix: "title", level: "write", body: { title: "matrix" } },
  { method: "POST", suffix: "slash/subagent", level: "write", body: { name: "helper", goal: "matrix" } },
  { method: "POST", suffix: "slash/btw", level: "write", body: { question: "matrix?" } },
  ...["slash/done", "slash/replan", "agents/helper/stop"].map(
    (suffix): SessionRoute => ({ method: "POST", suffix, level: "write", body: {} }),
  ),
  { method: "GET", suffix: "tool-results/call-none/raw", level: "read" },
  { method: "PATCH", suffix: "acl", level: "admin", body: { owner: "nobody" } },
];

const ROLES: Record<CallerName, Level[]> = {
  eve: [],
  vic: ["read"],
  carol: ["read", "write"],
  alice: ["read", "write", "admin"],
  root: ["read", "write", "admin"],
  bob: [],
  gw: [],
};
const TRIED: CallerName[] = ["eve", "vic", "carol", "alice", "root"];
const NAMES: Partial<Record<CallerName, string>> = {
  eve: "stranger",
  vic: "viewer",
  carol: "contributor",
  alice: "owner",
  root: "admin",
};

let tenant: TenantDaemon;
beforeAll(async () => {
  // A fast heartbeat: /perms/stream sends its headers with its first bytes (a prompt or a ping).
  tenant = await startTenantDaemon(["--sse-heartbeat=100ms"]);
  const created = await tenant.send({
    method: "POST",
    path: "/sessions",
    as: "alice",
    body: { sessionID: "matrix", viewers: ["vic"], contributors: ["carol"] },
  });
  expect(created.status).toBe(201);
  expect(
    (await tenant.send({ method: "POST", path: "/sessions", as: "alice", body: { sessionID: "alices" } })).status,
  ).toBe(201);
});
afterAll(async () => {
  await tenant.stop();
});

/** What a caller can observe of an answer, with the session id in the error text generalized. */
async function fingerprint(response: Response, id: string): Promise<string> {
  const names = [...response.headers.keys()].filter((name) => name !== "date" && name !== "content-length").sort();
  const text = await drain(response);
  return JSON.stringify({
    status: response.status,
    type: response.headers.get("content-type"),
    names,
    body: text.split(id).join("<id>"),
  });
}

const shapes = [
  { name: "short", path: (id: string) => `/sessions/${id}` },
  { name: "qualified", path: (id: string) => `/sessions/spar/${id}` },
];

async function tryRoute(route: SessionRoute, as: CallerName, base: string): Promise<Response> {
  return await tenant.send({
    method: route.method,
    path: `${base}/${route.suffix}`,
    as,
    ...(route.body === undefined ? {} : { body: route.body }),
  });
}

function describeRights(route: SessionRoute): string {
  const denied = TRIED.filter((caller) => !ROLES[caller].includes(route.level)).map((caller) => NAMES[caller]);
  const allowed = TRIED.filter((caller) => ROLES[caller].includes(route.level)).map((caller) => NAMES[caller]);
  return `${route.method} /${route.suffix}: ${denied.join(", ")} get the masked 404; ${allowed.join(", ")} pass (both path shapes)`;
}

describe("ACL matrix", () => {
  for (const route of ROUTES) {
    test(describeRights(route), async () => {
      const problems: string[] = [];
      for (const shape of shapes) {
        const missing = await fingerprint(await tryRoute(route, "alice", shape.path("nx-matrix")), "nx-matrix");
        expect(missing).toContain('"status":404');
        for (const caller of TRIED) {
          const answer = await fingerprint(await tryRoute(route, caller, shape.path("matrix")), "matrix");
          const allowed = ROLES[caller].includes(route.level);
          if (!allowed && answer !== missing)
            problems.push(`${shape.name} ${caller}: ${answer} differs from a missing session's ${missing}`);
          if (allowed && answer === missing)
            problems.push(`${shape.name} ${caller}: allowed but answered as a missing session`);
        }
      }
      expect(problems).toEqual([]);
    });
  }

  test("every session route, in both shapes, refuses a caller without a token 401 before any lookup", async () => {
    const problems: string[] = [];
    for (const route of ROUTES) {
      for (const shape of shapes) {
        for (const id of ["matrix", "nx-matrix"]) {
          const response = await tryRoute(route, "none" as CallerName, shape.path(id));
          await drain(response);
          if (response.status !== 401)
            problems.push(`${route.method} ${shape.path(id)}/${route.suffix}: ${response.status}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  test("DELETE: a stranger, viewer or contributor gets the masked 404 and the session survives; owner and admin delete it (204)", async () => {
    for (const [deleter, shape] of [
      ["alice", 0],
      ["alice", 1],
      ["root", 0],
      ["root", 1],
    ] as const) {
      const id = `del-${deleter}-${shape}`;
      expect(
        (
          await tenant.send({
            method: "POST",
            path: "/sessions",
            as: "alice",
            body: { sessionID: id, viewers: ["vic"], contributors: ["carol"] },
          })
        ).status,
      ).toBe(201);
      const path = shapes[shape]?.path(id) ?? "";
      const missing = await fingerprint(
        await tenant.send({ method: "DELETE", path: shapes[shape]?.path(`nx-${id}`) ?? "", as: "alice" }),
        `nx-${id}`,
      );
      for (const caller of ["eve", "vic", "carol"] as const) {
        expect([caller, await fingerprint(await tenant.send({ method: "DELETE", path, as: caller }), id)]).toEqual([
          caller,
          missing,
        ]);
      }
      expect((await tenant.send({ path: `${path}/status`, as: "alice" })).status).toBe(200);
      expect((await tenant.send({ method: "DELETE", path, as: deleter })).status).toBe(204);
      expect((await tenant.send({ path: `${path}/status`, as: "alice" })).status).toBe(404);
    }
  });

  test("GET /sessions lists a session to its owner, contributor, viewer and the admin, never to a stranger", async () => {
    for (const caller of TRIED) {
      const listed = (await (await tenant.send({ path: "/sessions", as: caller })).json()) as {
        sessions: Array<{ sessionID: string }>;
      };
      const ids = listed.sessions.map((row) => row.sessionID);
      expect([caller, ids.includes("matrix")]).toEqual([caller, caller !== "eve"]);
    }
    const stranger = (await (await tenant.send({ path: "/sessions", as: "eve" })).json()) as { sessions: unknown[] };
    expect(stranger.sessions).toEqual([]);
  });
});

describe("another caller's sessions", () => {
  const cases: AttackCase[] = [
    { name: "bob reading alice's status gets the masked 404", path: "/sessions/alices/status", as: "bob", expect: 404 },
    {
      name: "bob reading alice's events (qualified path) gets the masked 404",
      path: "/sessions/spar/alices/events",
      as: "bob",
      expect: 404,
    },
    {
      name: "bob injecting into alice's session gets the masked 404",
      method: "POST",
      path: "/sessions/alices/inject",
      as: "bob",
      body: { message: "x" },
      expect: 404,
    },
    {
      name: "bob deleting alice's session gets the masked 404",
      method: "DELETE",
      path: "/sessions/alices",
      as: "bob",
      expect: 404,
    },
    { name: "bob reading alice's ACL gets the masked 404", path: "/sessions/alices/acl", as: "bob", expect: 404 },
    {
      name: "bob reading the default session's usage gets the masked 404",
      path: "/sessions/default/usage",
      as: "bob",
      expect: 404,
    },
    {
      name: "bob adding himself to alice's ACL gets the masked 404",
      method: "PATCH",
      path: "/sessions/alices/acl",
      as: "bob",
      body: { viewers: ["bob"] },
      expect: 404,
    },
    { name: "the admin reads alice's ACL (200)", path: "/sessions/alices/acl", as: "root", expect: 200 },
    {
      name: "bob creating a session with alice's id gets the masked 404, as for any session he cannot see",
      method: "POST",
      path: "/sessions",
      as: "bob",
      body: { sessionID: "alices" },
      expect: 404,
    },
    {
      name: "alice creating a session with the id of her own gets 409",
      method: "POST",
      path: "/sessions",
      as: "alice",
      body: { sessionID: "alices" },
      expect: 409,
    },
  ];
  for (const attack of cases) {
    test(attack.name, async () => {
      expect(await caseProblems(tenant, attack)).toEqual([]);
    });
  }

  test("a viewer cannot widen its own rights: PATCH /acl adding itself as contributor gets the masked 404 and the ACL is unchanged", async () => {
    expect(
      (
        await tenant.send({
          method: "PATCH",
          path: "/sessions/matrix/acl",
          as: "vic",
          body: { contributors: ["carol", "vic"] },
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await tenant.send({
          method: "PATCH",
          path: "/sessions/matrix/acl",
          as: "carol",
          body: { contributors: ["carol", "eve"] },
        })
      ).status,
    ).toBe(404);
    const acl = (await (await tenant.send({ path: "/sessions/matrix/acl", as: "alice" })).json()) as {
      owner: string;
      viewers: string[];
      contributors: string[];
    };
    expect(acl).toEqual({ owner: "alice", viewers: ["vic"], contributors: ["carol"] });
  });
});
