/**
 * Authentication attacks on svc's A2A listener (`SVC_A2A_TOKEN`, a real process): every forged or
 * missing bearer is a 401 with `WWW-Authenticate`, a valid token without the skill's scopes a 403,
 * and none of them reaches JSON-RPC (no task is minted). The cards stay public.
 */
import { beforeAll, expect, test } from "bun:test";
import { daemonScope } from "../support/daemon-scope.ts";
import { A2A_SECRET, type A2aDaemon, rpc, signJwt, startA2aDaemon, textMessage } from "../support/a2a-daemon.ts";

const scope = daemonScope({ per: "file" });
let served: A2aDaemon;
beforeAll(async () => {
  served = await startA2aDaemon(scope, [], { scopes: ["changes:write"] });
});

const unsigned = (claims: Record<string, unknown>) =>
  `${Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url")}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}.`;

async function expect401(token: string | null): Promise<string> {
  const answer = await rpc(served.a2aUrl, "message/send", { message: textMessage("x") }, token);
  expect(answer.status).toBe(401);
  expect(answer.headers.get("www-authenticate")).toBe('Bearer realm="a2a"');
  expect(answer.body.result).toBeUndefined();
  return answer.body.error as string;
}

test("a request without a bearer is refused 401", async () => {
  expect(await expect401(null)).toContain("missing a2a bearer token");
});

test("a wrong secret is refused 401", async () => {
  expect(await expect401("a2a-s3cret-for-test")).toContain("wrong a2a token");
});

test("an alg:none token naming a tenant is refused 401", async () => {
  expect(await expect401(unsigned({ tenant: "team-a", scope: "changes:write" }))).toContain("wrong a2a token");
});

test("a JWT signed with another key is refused 401", async () => {
  expect(await expect401(signJwt({ tenant: "team-a", scope: "changes:write" }, "other-key"))).toContain(
    "wrong a2a token",
  );
});

test("an expired JWT is refused 401", async () => {
  const expired = signJwt({ tenant: "team-a", scope: "changes:write", exp: Math.floor(Date.now() / 1000) - 3600 });
  expect(await expect401(expired)).toContain("expired");
});

test("a JWT naming no tenant and no subject is refused 401", async () => {
  expect(await expect401(signJwt({ scope: "changes:write" }))).toContain("no tenant and no subject");
});

test("a JWT whose tenant or subject is an identity the daemon uses is refused 401, never reading another tenant's task (D328)", async () => {
  const owner = signJwt({ tenant: "team-a", scope: "changes:write" });
  const sent = await rpc(served.a2aUrl, "message/send", { message: textMessage("mine") }, owner);
  const id = (sent.body.result as { id: string }).id;
  expect(typeof id).toBe("string");
  for (const claims of [{ tenant: "svc-inject" }, { tenant: "svc-a2a" }, { sub: "svc:internal" }, { sub: "local" }]) {
    const answer = await rpc(served.a2aUrl, "tasks/get", { id }, signJwt({ ...claims, scope: "changes:write" }));
    expect(answer.status).toBe(401);
    expect(answer.headers.get("www-authenticate")).toBe('Bearer realm="a2a"');
    expect(answer.body.error).toContain("is refused");
    expect(answer.body.result).toBeUndefined();
  }
  // The control: the owner reads it.
  expect((await rpc(served.a2aUrl, "tasks/get", { id }, owner)).body.result).toMatchObject({ id });
});

test("a JWT without exp, or with a string exp, is refused 401 (D329)", async () => {
  expect(await expect401(signJwt({ tenant: "team-a", scope: "changes:write", exp: undefined }))).toContain("no exp");
  const soon = String(Math.floor(Date.now() / 1000) + 60);
  expect(await expect401(signJwt({ tenant: "team-a", scope: "changes:write", exp: soon }))).toContain("NumericDate");
});

test("the shared secret itself holds no scopes: a skill declaring scopes refuses it 403", async () => {
  const answer = await rpc(served.a2aUrl, "message/send", { message: textMessage("x") }, A2A_SECRET);
  expect(answer.status).toBe(403);
  expect(answer.body.error).toContain("changes:write");
});

test("a JWT without the skill's scope is refused 403 on every method, tasks/get included", async () => {
  const token = signJwt({ sub: "agent-7", scope: "changes:read" });
  for (const method of ["message/send", "message/stream", "tasks/get", "tasks/cancel", "tasks/resubscribe"]) {
    const answer = await rpc(served.a2aUrl, method, { id: "a2a-x", message: textMessage("x") }, token);
    expect(answer.status).toBe(403);
  }
});

test("the cards are public: no bearer needed, and they leak no secret", async () => {
  const response = await fetch(`${served.a2aUrl}/.well-known/agent-card.json`);
  expect(response.status).toBe(200);
  const text = await response.text();
  expect(text).not.toContain(A2A_SECRET);
  expect(JSON.parse(text).securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" });
});
