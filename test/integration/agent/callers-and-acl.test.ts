/**
 * Multi-session auth against a real daemon: callers from a bearer-token table, admins, proxy
 * assertions, /whoami, the ACL matrix on session routes (denial looks exactly like a missing
 * session), the per-caller session list, and ACLs surviving a restart.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "../../../src/surfaces/http/caller-auth.ts";
import { type Daemon, postJson, startDaemon, tempDir } from "../../support/daemon.ts";

const tokens = {
  olga: "tok-olga",
  cora: "tok-cora",
  vic: "tok-vic",
  root: "tok-root",
  proxy: "tok-proxy",
  mallory: "tok-mallory",
};
let daemon: Daemon;
let dir: string;

function configFiles(): string[] {
  dir = tempDir();
  const table = join(dir, "callers.yaml");
  writeFileSync(
    table,
    [
      "callers:",
      ...Object.entries(tokens)
        .filter(([name]) => name !== "proxy")
        .map(([name, token]) => `  - identity: ${name}\n    token_sha256: ${sha256Hex(token)}`),
      "  - identity: gateway\n    token_env: SPAR_PROXY_TOKEN",
      "",
    ].join("\n"),
  );
  writeFileSync(
    join(dir, "config.json"),
    JSON.stringify({
      attach: { multi_session: { auth: { admin_identities: ["root"], proxy_identities: ["gateway"] } } },
    }),
  );
  return ["--multi-session", `--auth-table=${table}`, `--config=${join(dir, "config.json")}`];
}

const as = (who: keyof typeof tokens, extra: Record<string, string> = {}) => ({
  authorization: `Bearer ${tokens[who]}`,
  ...extra,
});

beforeAll(async () => {
  daemon = await startDaemon({ args: configFiles(), env: { SPAR_PROXY_TOKEN: tokens.proxy } });
  const created = await postJson(
    `${daemon.baseUrl}/sessions`,
    { sessionID: "olgas", viewers: ["vic"], contributors: [" cora ", "cora", ""] },
    as("olga"),
  );
  expect(created.status).toBe(201);
});
afterAll(async () => {
  await daemon.sigterm();
});

async function status(
  path: string,
  headers: Record<string, string>,
  init: { method?: string; body?: unknown } = {},
): Promise<number> {
  const abort = new AbortController();
  const response = await fetch(`${daemon.baseUrl}${path}`, {
    method: init.method ?? "GET",
    headers: { "content-type": "application/json", ...headers },
    signal: abort.signal,
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  // An event stream never ends: its status is all this needs.
  if (response.headers.get("content-type") === "text/event-stream") abort.abort();
  else await response.arrayBuffer();
  return response.status;
}

describe("callers", () => {
  test("whoami for bearer, admin, asserted and refused callers", async () => {
    const whoami = async (headers: Record<string, string>) =>
      (await fetch(`${daemon.baseUrl}/whoami`, { headers })).json();
    expect(await whoami(as("olga"))).toEqual({ identity: "olga", admin: false, source: "bearer" });
    expect(await whoami(as("root"))).toEqual({ identity: "root", admin: true, source: "bearer" });
    expect(await whoami(as("proxy", { "x-asserted-caller": "oncall@example.com" }))).toEqual({
      identity: "oncall@example.com",
      admin: false,
      source: "asserted",
      proxy_by: "gateway",
    });
    const anonymous = await fetch(`${daemon.baseUrl}/whoami`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toBe('Bearer realm="attach-multisession"');
    const notProxy = await fetch(`${daemon.baseUrl}/whoami`, { headers: as("olga", { "x-asserted-caller": "root" }) });
    expect(notProxy.status).toBe(401);
    expect(notProxy.headers.get("www-authenticate")).toBe('Bearer realm="attach-multisession"');
    expect((await fetch(`${daemon.baseUrl}/whoami`, { headers: { authorization: "Bearer forged" } })).status).toBe(401);
    expect(
      (await fetch(`${daemon.baseUrl}/whoami`, { headers: as("proxy", { "x-asserted-caller": "  " }) })).status,
    ).toBe(401);
  });

  test("each caller's capabilities frame names that caller and the URL it used (the encoded frame is cached per caller and URL)", async () => {
    const firstFrame = async (headers: Record<string, string>, base = daemon.baseUrl) => {
      const abort = new AbortController();
      const response = await fetch(`${base}/sessions/olgas/events`, { headers, signal: abort.signal });
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      let text = "";
      while (!text.includes("\n\n")) text += new TextDecoder().decode((await reader.read()).value);
      abort.abort();
      return JSON.parse(/^data: (.*)$/m.exec(text)?.[1] ?? "{}") as { caller_id: string; agent: { url: string } };
    };
    for (let round = 0; round < 2; round++) {
      expect((await firstFrame(as("olga"))).caller_id).toBe("olga");
      expect((await firstFrame(as("vic"))).caller_id).toBe("vic");
      expect((await firstFrame(as("root"))).caller_id).toBe("root");
    }
    const viaLocalhost = await firstFrame(as("olga"), daemon.baseUrl.replace("127.0.0.1", "localhost"));
    expect(viaLocalhost).toMatchObject({
      caller_id: "olga",
      agent: { url: daemon.baseUrl.replace("127.0.0.1", "localhost") },
    });
    expect((await firstFrame(as("olga"))).agent.url).toBe(daemon.baseUrl);
  });

  test("the proxy's assertion creates a session owned by the asserted caller", async () => {
    const response = await postJson(
      `${daemon.baseUrl}/sessions`,
      { sessionID: "asserted-1" },
      as("proxy", { "x-asserted-caller": "oncall@example.com" }),
    );
    expect(response.status).toBe(201);
    expect(((await response.json()) as { user: string }).user).toBe("oncall@example.com");
    expect(await status("/sessions/asserted-1/acl", as("proxy", { "x-asserted-caller": "oncall@example.com" }))).toBe(
      200,
    );
    expect(await status("/sessions/asserted-1/acl", as("proxy"))).toBe(404);
  });
});

describe("ACL matrix", () => {
  const rows: Array<[keyof typeof tokens, number, number, number]> = [
    // caller, read (GET status), write (POST inject), admin (GET acl)
    ["olga", 200, 200, 200],
    ["cora", 200, 200, 404],
    ["vic", 200, 404, 404],
    ["root", 200, 200, 200],
    ["mallory", 404, 404, 404],
  ];
  for (const [who, read, write, admin] of rows) {
    test(`${who}: read ${read}, write ${write}, admin ${admin}`, async () => {
      expect(await status("/sessions/olgas/status", as(who))).toBe(read);
      expect(await status("/sessions/spar/olgas/events?since=999999", as(who))).toBe(read === 200 ? 200 : 404);
      expect(
        await status("/sessions/olgas/inject", as(who), { method: "POST", body: { message: `from ${who}` } }),
      ).toBe(write);
      expect(await status("/sessions/olgas/acl", as(who))).toBe(admin);
    });
  }

  test("a denied request looks exactly like a missing session", async () => {
    const denied = await fetch(`${daemon.baseUrl}/sessions/olgas/status`, { headers: as("mallory") });
    const missing = await fetch(`${daemon.baseUrl}/sessions/no-such-session/status`, { headers: as("mallory") });
    expect(denied.status).toBe(missing.status);
    expect(((await denied.json()) as { error: string }).error).toBe("session not found: olgas");
    expect(((await missing.json()) as { error: string }).error).toBe("session not found: no-such-session");
    expect(await status("/sessions/olgas", as("cora"), { method: "DELETE" })).toBe(404);
  });

  test("a repeated DELETE is 500 only to those who could have deleted the session; to others it is missing (404)", async () => {
    expect(
      (
        await postJson(
          `${daemon.baseUrl}/sessions`,
          { sessionID: "olga-tmp", app: "scratch", contributors: ["cora"] },
          as("olga"),
        )
      ).status,
    ).toBe(201);
    expect(await status("/sessions/olga-tmp", as("olga"), { method: "DELETE" })).toBe(204);
    // The owner and an admin learn it was deleted, on either path shape.
    expect(await status("/sessions/olga-tmp", as("olga"), { method: "DELETE" })).toBe(500);
    expect(await status("/sessions/scratch/olga-tmp", as("olga"), { method: "DELETE" })).toBe(500);
    expect(await status("/sessions/olga-tmp", as("root"), { method: "DELETE" })).toBe(500);
    // A contributor (no SessionAdmin) and a stranger cannot tell it from an id that never existed.
    expect(await status("/sessions/olga-tmp", as("cora"), { method: "DELETE" })).toBe(404);
    expect(await status("/sessions/olga-tmp", as("mallory"), { method: "DELETE" })).toBe(404);
    expect(await status("/sessions/scratch/olga-tmp", as("mallory"), { method: "DELETE" })).toBe(404);
  });

  test("the ACL was normalized on create and the list is filtered per caller; admins see all", async () => {
    const acl = await (await fetch(`${daemon.baseUrl}/sessions/olgas/acl`, { headers: as("olga") })).json();
    expect(acl).toEqual({ owner: "olga", viewers: ["vic"], contributors: ["cora"] });
    const list = async (who: keyof typeof tokens) =>
      (
        (await (await fetch(`${daemon.baseUrl}/sessions`, { headers: as(who) })).json()) as {
          sessions: Array<{ sessionID: string }>;
        }
      ).sessions
        .map((row) => row.sessionID)
        .sort();
    expect(await list("vic")).toEqual(["olgas"]);
    expect(await list("mallory")).toEqual([]);
    expect(await list("root")).toEqual(["asserted-1", "default", "olgas"]);
  });
});

test("ACLs survive a restart", async () => {
  await daemon.sigterm();
  daemon = await startDaemon({
    args: configFiles(),
    sessionDb: daemon.sessionDb,
    env: { SPAR_PROXY_TOKEN: tokens.proxy },
  });
  expect(await status("/sessions/olgas/status", as("vic"))).toBe(200);
  expect(await status("/sessions/olgas/inject", as("vic"), { method: "POST", body: { message: "no" } })).toBe(404);
  expect(await status("/sessions/olgas/acl", as("olga"))).toBe(200);
  expect(await status("/sessions/olgas/status", as("mallory"))).toBe(404);
});
