/**
 * The embedded dashboard's guards (D368, D371): `/ui/*` and `/config` sit behind the attach token;
 * no request path reaches a file outside `--ui-dir`, one test per traversal form, each sent as raw
 * bytes (fetch would normalize some of them first); the routes do not exist without a UI
 * directory; the CORS allow list answers its own origins' preflights and nobody else's, and a
 * foreign origin's write is still 403.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Daemon, startDaemon, tempDir } from "../support/daemon.ts";
import { inProcessApp } from "../support/attach-app.ts";
import { type RawAnswer, rawHttp } from "../support/raw-http.ts";

const TOKEN = "ui-guard-token";
const SECRET = "TOP-SECRET-OUTSIDE-THE-UI-DIR";
const ALLOWED = "https://dash.example.com";

let daemon: Daemon;
let root: string;

beforeAll(async () => {
  root = tempDir("spar-ui-guard-");
  const ui = join(root, "ui");
  mkdirSync(join(ui, "assets"), { recursive: true });
  writeFileSync(join(ui, "index.html"), "<!doctype html><title>ui</title><p id=ok>served</p>");
  writeFileSync(join(ui, "assets", "app.js"), "console.log('ok');");
  writeFileSync(join(ui, ".env"), SECRET);
  writeFileSync(join(root, "secret.txt"), SECRET);
  symlinkSync(join(root, "secret.txt"), join(ui, "leak.txt"));
  symlinkSync(root, join(ui, "outside"));
  daemon = await startDaemon({
    args: ["--attach-token=UI_GUARD_TOKEN", `--ui-dir=${ui}`, `--attach-cors-origins=${ALLOWED}`],
    env: { UI_GUARD_TOKEN: TOKEN },
  });
});

afterAll(async () => {
  await daemon?.sigterm();
});

/** One raw GET with the token. */
function rawGet(path: string): Promise<RawAnswer> {
  return rawHttp(
    daemon.port,
    `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${daemon.port}\r\nAuthorization: Bearer ${TOKEN}\r\nConnection: close\r\n\r\n`,
  );
}

function expectRefused(answer: RawAnswer, status: number, error?: string) {
  expect(answer.body).not.toContain(SECRET);
  expect(answer.status).toBe(status);
  if (error !== undefined) expect(JSON.parse(answer.body)).toEqual({ error });
}

describe("traversal: no path reaches a file outside --ui-dir", () => {
  test("the control: the same daemon serves a file inside", async () => {
    const answer = await rawGet("/ui/assets/app.js");
    expect([answer.status, answer.body]).toEqual([200, "console.log('ok');"]);
  });

  test("`..` segments (Bun collapses them first, so the path leaves /ui and matches no route)", async () => {
    expectRefused(await rawGet("/ui/../secret.txt"), 404);
    expectRefused(await rawGet("/ui/assets/../../secret.txt"), 404);
  });

  test("`%2e%2e` encoded dots", async () => {
    expectRefused(await rawGet("/ui/%2e%2e/secret.txt"), 404);
    expectRefused(await rawGet("/ui/.%2E/secret.txt"), 404);
  });

  test("double encoding (`%252e%252e`)", async () => {
    expectRefused(await rawGet("/ui/%252e%252e/secret.txt"), 400, "path refused: double percent-encoding");
  });

  test("backslashes, raw and encoded", async () => {
    expectRefused(await rawGet("/ui/..\\secret.txt"), 404);
    expectRefused(await rawGet("/ui/..%5csecret.txt"), 400, "path refused: an encoded backslash");
  });

  test("absolute paths (`//`, an encoded leading slash)", async () => {
    expectRefused(await rawGet(`/ui/${root}/secret.txt`), 400, "path refused: an empty segment or an absolute path");
    expectRefused(await rawGet("/ui/%2fetc%2fpasswd"), 400, "path refused: an empty segment or an absolute path");
  });

  test("NUL bytes", async () => {
    expectRefused(await rawGet("/ui/index.html%00.js"), 400, "path refused: a NUL byte");
  });

  test("symlinks pointing outside (a file, a directory) are absent", async () => {
    expectRefused(await rawGet("/ui/leak.txt"), 404);
    expectRefused(await rawGet("/ui/outside/secret.txt"), 404);
  });

  test("hidden files are refused", async () => {
    expectRefused(await rawGet("/ui/.env"), 400, "path refused: a hidden file");
  });

  test("no directory listing: a directory without an extension is the app's index.html", async () => {
    const answer = await rawGet("/ui/assets/");
    expect(answer.status).toBe(200);
    expect(answer.body).toContain("<p id=ok>served</p>");
    expect(answer.body).not.toContain("app.js");
  });
});

describe("auth", () => {
  test("/ui, /ui/, a file and /config are 401 without the token, and the token names no value", async () => {
    for (const path of ["/ui", "/ui/", "/ui/assets/app.js", "/config"]) {
      const response = await fetch(`${daemon.baseUrl}${path}`, { redirect: "manual" });
      const body = (await response.json()) as { error: string };
      expect([path, response.status, response.headers.get("www-authenticate")]).toEqual([
        path,
        401,
        'Bearer realm="attach"',
      ]);
      expect(body.error).not.toContain(TOKEN);
    }
  });

  test("the routes do not exist without --ui-dir: 404 as any unknown path", async () => {
    const { app, close } = await inProcessApp();
    try {
      for (const path of ["/ui", "/ui/", "/ui/index.html", "/config"]) {
        const response = await app.handle(new Request(`http://127.0.0.1${path}`));
        expect([path, response.status]).toEqual([path, 404]);
      }
    } finally {
      await close();
    }
  });
});

describe("CORS (--attach-cors-origins)", () => {
  const preflight = (origin: string) =>
    fetch(`${daemon.baseUrl}/sessions/default/inject`, {
      method: "OPTIONS",
      headers: {
        origin,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type",
      },
    });

  test("an allowed origin's preflight is answered with the allowance, before the token", async () => {
    const response = await preflight(ALLOWED);
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-origin")).toBe(ALLOWED);
    expect(response.headers.get("access-control-allow-methods")).toBe("GET, POST, PATCH, DELETE");
    expect(response.headers.get("access-control-allow-headers")).toContain("x-attach-token");
    expect(response.headers.get("access-control-max-age")).toBe("600");
    expect(response.headers.get("vary")).toBe("Origin");
    expect(response.headers.get("access-control-allow-credentials")).toBeNull();
  });

  test("a foreign origin's preflight is refused and carries no CORS header", async () => {
    const response = await preflight("https://evil.example");
    expect(response.status).toBe(403);
    expect([...response.headers.keys()].filter((name) => name.startsWith("access-control-"))).toEqual([]);
  });

  test("an allowed origin's answers carry its origin; a foreign origin's carry nothing", async () => {
    const allowed = await fetch(`${daemon.baseUrl}/sessions`, {
      headers: { origin: ALLOWED, authorization: `Bearer ${TOKEN}` },
    });
    expect([allowed.status, allowed.headers.get("access-control-allow-origin")]).toEqual([200, ALLOWED]);
    expect(allowed.headers.get("vary")).toBe("Origin");
    const foreign = await fetch(`${daemon.baseUrl}/sessions`, {
      headers: { origin: "https://evil.example", authorization: `Bearer ${TOKEN}` },
    });
    expect(foreign.status).toBe(200);
    expect([...foreign.headers.keys()].filter((name) => name.startsWith("access-control-"))).toEqual([]);
  });

  test("a write from a foreign origin is still 403 (CSRF); the allowed origin's write passes the check", async () => {
    const write = (origin: string) =>
      fetch(`${daemon.baseUrl}/sessions/default/title`, {
        method: "POST",
        headers: { origin, authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ title: "from a browser" }),
      });
    const foreign = await write("https://evil.example");
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as { error: string }).error).toContain("cross-origin request refused");
    const allowed = await write(ALLOWED);
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get("access-control-allow-origin")).toBe(ALLOWED);
  });
});
