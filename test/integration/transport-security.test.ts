/**
 * Transport security of the attach listener against real daemons: the shared bearer token
 * (X-Attach-Token wins even when wrong), read-only mode, the CSRF guard, the exact-path /healthz
 * exemption, and the startup policy for non-loopback binds.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { type Daemon, MAIN, startDaemon, tempDir } from "../support/daemon.ts";
import { collect } from "../support/sse-client.ts";

const TOKEN = "s3cret-token-for-tests";
let guarded: Daemon;
let readonly: Daemon;
beforeAll(async () => {
  [guarded, readonly] = await Promise.all([
    startDaemon({ args: ["--attach-token=SPAR_TEST_TOKEN", "--attach-listen=0.0.0.0:0"], env: { SPAR_TEST_TOKEN: TOKEN } }),
    startDaemon({ args: ["--attach-readonly"] }),
  ]);
});
afterAll(async () => {
  await Promise.all([guarded.sigterm(), readonly.sigterm()]);
});

async function call(daemon: Daemon, path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Response> {
  return fetch(`${daemon.baseUrl}${path}`, init);
}

const inject = { method: "POST", body: JSON.stringify({ message: "hi" }) };
const json = { "content-type": "application/json" };

describe("shared bearer token", () => {
  test("missing or wrong tokens get 401 with the attach realm; the right one in either header passes", async () => {
    const missing = await call(guarded, "/sessions");
    expect(missing.status).toBe(401);
    expect(missing.headers.get("www-authenticate")).toBe('Bearer realm="attach"');
    expect(((await missing.json()) as { error: string }).error).toContain("token");
    expect((await call(guarded, "/sessions", { headers: { authorization: "Bearer nope" } })).status).toBe(401);
    expect((await call(guarded, "/sessions", { headers: { authorization: `Basic ${TOKEN}` } })).status).toBe(401);
    expect((await call(guarded, "/sessions", { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
    expect((await call(guarded, "/sessions", { headers: { "x-attach-token": TOKEN } })).status).toBe(200);
  });

  test("X-Attach-Token decides when present, even when wrong and Authorization is right", async () => {
    const response = await call(guarded, "/sessions", { headers: { "x-attach-token": "wrong", authorization: `Bearer ${TOKEN}` } });
    expect(response.status).toBe(401);
    expect((await call(guarded, "/sessions", { headers: { "x-attach-token": "", authorization: `Bearer ${TOKEN}` } })).status).toBe(401);
  });

  test("writes, streams and unknown paths need the token too; nothing runs without it", async () => {
    expect((await call(guarded, "/sessions/default/inject", { ...inject, headers: json })).status).toBe(401);
    expect((await call(guarded, "/no/such/path")).status).toBe(401);
    expect((await call(guarded, "/no/such/path", { headers: { "x-attach-token": TOKEN } })).status).toBe(404);
    expect((await call(guarded, "/sessions/default/events")).status).toBe(401);
    const stream = collect(`${guarded.baseUrl}/sessions/default/events`, { headers: { "x-attach-token": TOKEN } });
    await stream.waitFor((frame) => frame.event === "capabilities");
    stream.close();
    const usage = (await (await call(guarded, "/sessions/default/usage", { headers: { "x-attach-token": TOKEN } })).json()) as { overall: { turns: number } };
    expect(usage.overall.turns).toBe(0);
  });

  test("/healthz is exempt on its exact path only", async () => {
    expect((await call(guarded, "/healthz")).status).toBe(200);
    expect((await call(guarded, "/healthz", { method: "POST", headers: json })).status).toBe(405);
    expect((await call(guarded, "/healthz/")).status).toBe(401);
    expect((await call(guarded, "/healthzz")).status).toBe(401);
    expect((await call(guarded, "/healthz/sessions")).status).toBe(401);
    const body = (await (await call(guarded, "/healthz")).json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(["checks", "ok"]);
  });
});

describe("read-only mode", () => {
  test("reads are served; every write is 403", async () => {
    expect((await call(readonly, "/sessions")).status).toBe(200);
    expect((await call(readonly, "/sessions/default/inject", { ...inject, headers: json })).status).toBe(403);
    expect((await call(readonly, "/sessions", { method: "POST", headers: json })).status).toBe(403);
    expect((await call(readonly, "/sessions/x", { method: "DELETE", headers: json })).status).toBe(403);
  });
});

describe("CSRF guard", () => {
  const withToken = { "x-attach-token": TOKEN, ...json };
  test("cross-origin and null origins are refused; loopback, same-host and no origin pass", async () => {
    const evil = await call(guarded, "/sessions/default/inject", { ...inject, headers: { ...withToken, origin: "https://evil.example" } });
    expect(evil.status).toBe(403);
    expect(((await evil.json()) as { error: string }).error).toContain("cross-origin");
    expect((await call(guarded, "/sessions/default/inject", { ...inject, headers: { ...withToken, origin: "null" } })).status).toBe(403);
    expect((await call(guarded, "/sessions/default/inject", { ...inject, headers: { ...withToken, origin: "http://localhost:3000" } })).status).toBe(200);
    expect((await call(guarded, "/sessions/default/inject", { ...inject, headers: { ...withToken, origin: "http://[::1]:9" } })).status).toBe(200);
    expect((await call(guarded, "/sessions/default/inject", { ...inject, headers: { ...withToken, origin: "http://127.8.9.10" } })).status).toBe(200);
    expect((await call(guarded, "/sessions/default/inject", { ...inject, headers: { ...withToken, origin: `http://127.0.0.1:${guarded.port}`, host: `127.0.0.1:${guarded.port}` } })).status).toBe(200);
    expect((await call(guarded, "/sessions/default/inject", { ...inject, headers: withToken })).status).toBe(200);
  });

  test("writes without Content-Type: application/json are 415, with a body or without", async () => {
    expect((await call(guarded, "/sessions/default/wake", { method: "POST", headers: { "x-attach-token": TOKEN } })).status).toBe(415);
    expect((await call(guarded, "/sessions/default/inject", { ...inject, headers: { "x-attach-token": TOKEN, "content-type": "text/plain" } })).status).toBe(415);
    expect((await call(guarded, "/sessions/default/inject", { ...inject, headers: { "x-attach-token": TOKEN, "content-type": "application/json; charset=utf-8" } })).status).toBe(200);
  });
});

describe("startup policy", () => {
  async function startup(args: string[], env: Record<string, string> = {}): Promise<{ code: number; log: string }> {
    const dir = tempDir();
    const child = Bun.spawn([process.execPath, MAIN, "agent", `--session-db=${join(dir, "s.db")}`, ...args], { cwd: dir, env: { ...process.env, ...env }, stderr: "pipe", stdout: "pipe" });
    const code = await child.exited;
    return { code, log: await new Response(child.stderr).text() };
  }

  test("non-loopback binds without a gate are refused, naming the fix", async () => {
    for (const listen of ["0.0.0.0:0", ":0", "[::]:0", "example.com:0"]) {
      const result = await startup([`--attach-listen=${listen}`]);
      expect(result.code).toBe(1);
      expect(result.log).toContain("without an authentication gate");
      expect(result.log).toContain("--attach-token");
    }
  });

  test("a token variable that is not set is a startup error naming it", async () => {
    const result = await startup(["--attach-listen=127.0.0.1:0", "--attach-token=SPAR_NOT_SET_ANYWHERE"]);
    expect(result.code).toBe(1);
    expect(result.log).toContain("SPAR_NOT_SET_ANYWHERE");
  });

  test("a tokenless loopback listener starts with a warning", async () => {
    const daemon = await startDaemon({});
    expect(daemon.log()).toContain("has no token");
    await daemon.sigterm();
  });
});
