/**
 * Attacks on the JSON edge of the attach listener: malformed documents, wrong types, scalars and
 * arrays where objects belong, nesting to the limits of the body caps (and depth 10,000, which
 * no cap admits), invalid and non-UTF-8 encodings, non-finite numbers, and prototype-pollution
 * keys. Each is refused 400 (413 past a cap) with a JSON error, changes nothing, never a 500.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type AttackCase, type TenantDaemon, caseProblems, startTenantDaemon } from "../support/tenant-daemon.ts";

let tenant: TenantDaemon;
beforeAll(async () => {
  tenant = await startTenantDaemon();
  expect(
    (
      await tenant.send({
        method: "POST",
        path: "/sessions",
        as: "alice",
        body: { sessionID: "alices", viewers: ["vic"] },
      })
    ).status,
  ).toBe(201);
});
afterAll(async () => {
  await tenant.stop();
});

const inject = (name: string, raw: string | Uint8Array, expect: number): AttackCase => ({
  name,
  method: "POST",
  path: "/sessions/alices/inject",
  as: "alice",
  raw,
  expect,
});
const nestedArrays = (depth: number) => "[".repeat(depth) + "]".repeat(depth);
const cases: AttackCase[] = [
  inject("malformed JSON is refused 400", "{", 400),
  {
    name: "a JSON array body is refused 400",
    method: "POST",
    path: "/sessions/alices/inject",
    as: "alice",
    body: ["x"],
    expect: 400,
  },
  {
    name: "a null message is refused 400",
    method: "POST",
    path: "/sessions/alices/inject",
    as: "alice",
    body: { message: null },
    expect: 400,
  },
  {
    name: "an object message is refused 400",
    method: "POST",
    path: "/sessions/alices/inject",
    as: "alice",
    body: { message: { a: 1 } },
    expect: 400,
  },
  {
    name: "an empty message is refused 400",
    method: "POST",
    path: "/sessions/alices/inject",
    as: "alice",
    body: { message: "" },
    expect: 400,
  },
  {
    name: "a message of one NUL is accepted (200): it is text, not a terminator",
    method: "POST",
    path: "/sessions/alices/inject",
    as: "alice",
    body: { message: "\u0000" },
    expect: 200,
  },
  inject("arrays nested 3,000 deep are refused 400", nestedArrays(3000), 400),
  inject("arrays nested 4,000 deep (8,000 bytes, inside the 8 KiB cap) are refused 400", nestedArrays(4000), 400),
  inject(
    "objects nested 1,300 deep (inside the 8 KiB cap) are refused 400",
    `${'{"a":'.repeat(1300)}1${"}".repeat(1300)}`,
    400,
  ),
  inject("8,000 unclosed brackets are refused 400", "[".repeat(8000), 400),
  inject(
    "arrays nested 10,000 deep are refused 413: no cap admits them, they are never parsed",
    nestedArrays(10_000),
    413,
  ),
  {
    name: "arrays nested 8,000 deep on /peers (inside its 16 KiB cap) are refused 400",
    method: "POST",
    path: "/peers",
    as: "alice",
    raw: nestedArrays(8000),
    expect: 400,
  },
  {
    name: "arrays nested 10,000 deep on /peers are refused 413",
    method: "POST",
    path: "/peers",
    as: "alice",
    raw: nestedArrays(10_000),
    expect: 413,
  },
  {
    name: "a message nested 2,000 arrays deep inside a valid object is refused 400",
    method: "POST",
    path: "/sessions/alices/inject",
    as: "alice",
    raw: `{"message":${nestedArrays(2000)}}`,
    expect: 400,
  },
  inject("invalid UTF-8 is refused 400", new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), 400),
  inject(
    "an overlong UTF-8 encoding of '/' is refused 400",
    new Uint8Array([...new TextEncoder().encode('{"message":"a'), 0xc0, 0xaf, ...new TextEncoder().encode('"}')]),
    400,
  ),
  inject("a UTF-16 body is refused 400", new Uint8Array([0xfe, 0xff, 0x00, 0x7b, 0x00, 0x7d]), 400),
  inject("a JSON number as the whole body is refused 400", "42", 400),
  inject("a JSON string as the whole body is refused 400", '"message"', 400),
  inject("JSON true as the whole body is refused 400", "true", 400),
  inject("JSON null as the whole body is refused 400", "null", 400),
  inject("trailing garbage after the document is refused 400", '{"message":"x"}x', 400),
  inject("two documents in one body are refused 400", '{"message":"x"}{"message":"y"}', 400),
  inject("a comment in the document is refused 400", '{"message":"x" /* hi */}', 400),
  inject("single-quoted JSON is refused 400", "{'message':'x'}", 400),
  inject("a NaN literal is refused 400", '{"message":"x","wake":NaN}', 400),
  inject("a duplicate key whose last value has the wrong type is refused 400", '{"message":"x","message":5}', 400),
  inject("a message hidden behind __proto__ is refused 400", '{"__proto__":{"message":"x"}}', 400),
  {
    name: "a budget of 1e309 (Infinity once parsed) is refused 400",
    method: "POST",
    path: "/sessions/alices/guardrails/reset",
    as: "alice",
    raw: '{"guardrail":"cost_ceiling","additional_budget_usd":1e309}',
    expect: 400,
  },
  {
    name: "a null body on a route whose body is optional (wake) is refused 400",
    method: "POST",
    path: "/sessions/alices/wake",
    as: "alice",
    raw: "null",
    expect: 400,
  },
  {
    name: "creating a session with an owner field is refused 400",
    method: "POST",
    path: "/sessions",
    as: "alice",
    body: { owner: "alice" },
    expect: 400,
  },
  {
    name: "creating a session with viewers not a list is refused 400",
    method: "POST",
    path: "/sessions",
    as: "alice",
    body: { viewers: "bob" },
    expect: 400,
  },
  {
    name: "a wake with a target is refused 501 (not routed)",
    method: "POST",
    path: "/sessions/alices/wake",
    as: "alice",
    body: { target: "x" },
    expect: 501,
  },
  {
    name: "a mode given as a list is refused 400",
    method: "POST",
    path: "/sessions/alices/perms/mode",
    as: "alice",
    body: { mode: ["yolo"] },
    expect: 400,
  },
  {
    name: "allow patterns given as one string are refused 400",
    method: "POST",
    path: "/sessions/alices/perms/allow",
    as: "alice",
    body: { patterns: "*" },
    expect: 400,
  },
];
cases.push({
  name: "a DELETE's body is never read: a malformed one does not mask the route's own answer (404)",
  method: "DELETE",
  path: "/sessions/no-such-session",
  as: "alice",
  raw: "[".repeat(9000),
  expect: 404,
});
// valibot's object schemas take an array as an object (`typeof [] === "object"`): a route whose
// body fields are all optional would run with an array as "no fields" unless the edge refuses it.
for (const path of [
  "/sessions",
  "/sessions/alices/wake",
  "/sessions/alices/pause",
  "/sessions/alices/interrupt",
  "/sessions/alices/resume",
  "/sessions/alices/slash/compact",
  "/sessions/alices/guardrails/reset",
]) {
  cases.push({
    name: `a JSON array body on ${path} (every field optional) is refused 400, not taken as "no fields"`,
    method: "POST",
    path,
    as: "alice",
    raw: "[]",
    expect: 400,
  });
}
for (const attack of cases) {
  test(attack.name, async () => {
    expect(await caseProblems(tenant, attack)).toEqual([]);
  });
}

test("nesting is capped at 64 levels before any schema walks the body: 64 is accepted, 65 is refused naming the cap", async () => {
  const withExtra = (depth: number) => `{"message":"deep","extra":${nestedArrays(depth - 1)}}`;
  const accepted = await tenant.send({
    method: "POST",
    path: "/sessions/alices/inject",
    as: "alice",
    raw: withExtra(64),
  });
  expect(accepted.status).toBe(200);
  await accepted.arrayBuffer();
  const refused = await tenant.send({
    method: "POST",
    path: "/sessions/alices/inject",
    as: "alice",
    raw: withExtra(65),
  });
  expect(refused.status).toBe(400);
  expect(((await refused.json()) as { error: string }).error).toBe(
    "invalid request body: nested deeper than 64 levels",
  );
  // 4,000 levels on a route whose fields are all optional: refused by the parser, never handed to a
  // schema (whose failure report would print the value indented: 16 million characters).
  const deep = await tenant.send({
    method: "POST",
    path: "/sessions/alices/pause",
    as: "alice",
    raw: nestedArrays(4000),
  });
  expect(deep.status).toBe(400);
  expect(((await deep.json()) as { error: string }).error).toBe("invalid request body: nested deeper than 64 levels");
});

test("prototype-pollution keys in bodies grant no one anything: no admin, no owner change, no viewer added", async () => {
  const pollute =
    '{"__proto__":{"admin":true,"owner":"eve","viewers":["eve"]},"constructor":{"prototype":{"admin":true}}';
  expect(
    (await tenant.send({ method: "POST", path: "/sessions", as: "eve", raw: `${pollute},"sessionID":"eves"}` })).status,
  ).toBe(201);
  expect(
    (await tenant.send({ method: "PATCH", path: "/sessions/alices/acl", as: "alice", raw: `${pollute}}` })).status,
  ).toBe(200);
  expect(
    (
      await tenant.send({
        method: "POST",
        path: "/peers",
        as: "eve",
        raw: `{"name":"pp","endpoint":"https://pp.example","labels":{"__proto__":"x","constructor":"y","toString":"z"}}`,
      })
    ).status,
  ).toBe(201);
  const whoami = (await (await tenant.send({ path: "/whoami", as: "eve" })).json()) as { admin: boolean };
  expect(whoami.admin).toBe(false);
  expect((await tenant.send({ path: "/sessions/alices/status", as: "eve" })).status).toBe(404);
  const acl = (await (await tenant.send({ path: "/sessions/alices/acl", as: "alice" })).json()) as Record<
    string,
    unknown
  >;
  expect(acl).toEqual({ owner: "alice", viewers: ["vic"], contributors: [] });
  const eves = (await (await tenant.send({ path: "/sessions/eves/acl", as: "eve" })).json()) as Record<string, unknown>;
  expect(eves).toEqual({ owner: "eve", viewers: [], contributors: [] });
  const listed = (await (await tenant.send({ path: "/sessions", as: "bob" })).json()) as { sessions: unknown[] };
  expect(listed.sessions).toEqual([]);
});
