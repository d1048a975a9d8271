/**
 * Attacks on the attach listener's transport gate, against real daemons: missing and wrong shared
 * tokens (every length, one character off, in the wrong header, the query or a cookie),
 * X-Attach-Token deciding even when wrong, the exact-path /healthz exemption, read-only mode, and
 * tokens never reaching the daemon's log. Each refusal is a 401 (403 for read-only writes).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "../../src/surfaces/http/caller-auth.ts";
import { type Daemon, postJson, startDaemon, tempDir, waitFor } from "../support/daemon.ts";
import { rawHttp } from "../support/raw-http.ts";
import { collect } from "../support/sse-client.ts";
import { type AttackCase, type TenantDaemon, caseProblems, startTenantDaemon } from "../support/tenant-daemon.ts";

const TOKEN = "s3cret-token-for-tests";
let guarded: Daemon;
let readonly: Daemon;
let tenant: TenantDaemon;
beforeAll(async () => {
  [guarded, readonly, tenant] = await Promise.all([
    startDaemon({
      args: ["--attach-token=SPAR_TEST_TOKEN", "--attach-listen=0.0.0.0:0"],
      env: { SPAR_TEST_TOKEN: TOKEN },
    }),
    startDaemon({ args: ["--attach-readonly"] }),
    startTenantDaemon(),
  ]);
});
afterAll(async () => {
  await Promise.all([guarded.sigterm(), readonly.sigterm(), tenant.stop()]);
});

async function call(
  daemon: Daemon,
  path: string,
  init: { method?: string; headers?: Record<string, string> | Headers; body?: string } = {},
): Promise<Response> {
  return fetch(`${daemon.baseUrl}${path}`, init);
}

const inject = { method: "POST", body: JSON.stringify({ message: "hi" }) };
const json = { "content-type": "application/json" };

async function statusWith(headers: Record<string, string> | Headers, path = "/sessions"): Promise<number> {
  const response = await call(guarded, path, { headers });
  await response.arrayBuffer();
  return response.status;
}

describe("shared bearer token", () => {
  test("missing or wrong tokens are refused 401 with the attach realm; the right one in either header passes", async () => {
    const missing = await call(guarded, "/sessions");
    expect(missing.status).toBe(401);
    expect(missing.headers.get("www-authenticate")).toBe('Bearer realm="attach"');
    // The refusal names the headers and where the token comes from, never a value (D339).
    expect(((await missing.json()) as { error: string }).error).toBe(
      "missing or wrong attach token: send the listener's token (the variable --attach-token names) as Authorization: Bearer <token> or X-Attach-Token: <token>",
    );
    expect((await call(guarded, "/sessions", { headers: { authorization: "Bearer nope" } })).status).toBe(401);
    expect((await call(guarded, "/sessions", { headers: { authorization: `Basic ${TOKEN}` } })).status).toBe(401);
    expect((await call(guarded, "/sessions", { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
    expect((await call(guarded, "/sessions", { headers: { "x-attach-token": TOKEN } })).status).toBe(200);
  });

  test("a wrong X-Attach-Token is refused 401 even when Authorization carries the right token", async () => {
    const response = await call(guarded, "/sessions", {
      headers: { "x-attach-token": "wrong", authorization: `Bearer ${TOKEN}` },
    });
    expect(response.status).toBe(401);
    expect(
      (await call(guarded, "/sessions", { headers: { "x-attach-token": "", authorization: `Bearer ${TOKEN}` } }))
        .status,
    ).toBe(401);
  });

  test("writes, streams and unknown paths without the token are refused 401; nothing runs", async () => {
    expect((await call(guarded, "/sessions/default/inject", { ...inject, headers: json })).status).toBe(401);
    expect((await call(guarded, "/no/such/path")).status).toBe(401);
    expect((await call(guarded, "/no/such/path", { headers: { "x-attach-token": TOKEN } })).status).toBe(404);
    expect((await call(guarded, "/sessions/default/events")).status).toBe(401);
    const stream = collect(`${guarded.baseUrl}/sessions/default/events`, { headers: { "x-attach-token": TOKEN } });
    await stream.waitFor((frame) => frame.event === "capabilities");
    stream.close();
    const usage = (await (
      await call(guarded, "/sessions/default/usage", { headers: { "x-attach-token": TOKEN } })
    ).json()) as { overall: { turns: number } };
    expect(usage.overall.turns).toBe(0);
  });

  test("/healthz is exempt on its exact path only: /healthz/, /healthzz and /healthz/sessions are refused 401", async () => {
    expect((await call(guarded, "/healthz")).status).toBe(200);
    expect((await call(guarded, "/healthz", { method: "POST", headers: json })).status).toBe(405);
    expect((await call(guarded, "/healthz/")).status).toBe(401);
    expect((await call(guarded, "/healthzz")).status).toBe(401);
    expect((await call(guarded, "/healthz/sessions")).status).toBe(401);
    const body = (await (await call(guarded, "/healthz")).json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(["checks", "ok"]);
  });

  test("wrong tokens of every length from 0 to 64 characters are refused 401, in X-Attach-Token and in Authorization", async () => {
    const accepted: string[] = [];
    for (let length = 0; length <= 64; length++) {
      const guess = "k".repeat(length);
      if ((await statusWith({ "x-attach-token": guess })) !== 401) accepted.push(`x-attach-token length ${length}`);
      if (length > 0 && (await statusWith({ authorization: `Bearer ${guess}` })) !== 401)
        accepted.push(`bearer length ${length}`);
    }
    expect(accepted).toEqual([]);
  });

  test("the right token with one character changed, cut short, extended or case-flipped is refused 401", async () => {
    const guesses = new Set<string>();
    for (let at = 0; at < TOKEN.length; at++) {
      const changed = TOKEN[at] === "x" ? "y" : "x";
      guesses.add(`${TOKEN.slice(0, at)}${changed}${TOKEN.slice(at + 1)}`);
      if (at > 0) guesses.add(TOKEN.slice(0, at));
    }
    for (const guess of [`${TOKEN}x`, `${TOKEN}${TOKEN}`, TOKEN.toUpperCase(), `x${TOKEN}`, `${TOKEN}\u00e9`])
      guesses.add(guess);
    const accepted: string[] = [];
    for (const guess of guesses) {
      if ((await statusWith({ "x-attach-token": guess })) !== 401) accepted.push(guess);
      if ((await statusWith({ authorization: `Bearer ${guess}` })) !== 401) accepted.push(`bearer ${guess}`);
    }
    expect(accepted).toEqual([]);
    expect(guesses.size).toBeGreaterThan(TOKEN.length);
  });

  test("the token in the query string or a cookie is refused 401: only the two headers carry it", async () => {
    for (const query of [`token=${TOKEN}`, `access_token=${TOKEN}`, `x-attach-token=${TOKEN}`]) {
      expect(await statusWith({}, `/sessions?${query}`)).toBe(401);
    }
    expect(await statusWith({ cookie: `token=${TOKEN}; x-attach-token=${TOKEN}` })).toBe(401);
  });

  test("two X-Attach-Token headers, a wrong one and the right one, are refused 401", async () => {
    expect(
      await statusWith(
        new Headers([
          ["x-attach-token", "wrong"],
          ["x-attach-token", TOKEN],
        ]),
      ),
    ).toBe(401);
    expect(
      await statusWith(
        new Headers([
          ["x-attach-token", TOKEN],
          ["x-attach-token", TOKEN],
        ]),
      ),
    ).toBe(401);
  });

  test("a token guess with latin-1 bytes or a control character is refused 401, never a 500", async () => {
    for (const guess of ["s3cr\u00e9t", "\u00ff\u00fe", `${TOKEN}\u0001`]) {
      const answer = await rawHttp(
        guarded.port,
        `GET /sessions HTTP/1.1\r\nHost: 127.0.0.1:${guarded.port}\r\nX-Attach-Token: ${guess}\r\nConnection: close\r\n\r\n`,
      );
      expect([guess, answer.status === 401 || answer.status === 400]).toEqual([guess, true]);
    }
    expect(await statusWith({ "x-attach-token": TOKEN })).toBe(200);
  });
});

describe("shared token with per-caller auth", () => {
  const cases: AttackCase[] = [
    {
      name: "an empty X-Attach-Token is refused 401",
      path: "/sessions",
      as: "alice",
      headers: { "x-attach-token": "" },
      expect: 401,
    },
    {
      name: "a wrong X-Attach-Token with a valid caller is refused 401",
      path: "/sessions",
      as: "alice",
      headers: { "x-attach-token": "nope" },
      expect: 401,
    },
    {
      name: "the transport token as the only bearer names no caller: refused 401",
      path: "/whoami",
      headers: { "x-attach-token": "", authorization: "Bearer transport-token" },
      expect: 401,
    },
    {
      name: "a caller token in X-Attach-Token is no transport token: refused 401",
      path: "/sessions",
      headers: { "x-attach-token": "tok-alice" },
      expect: 401,
    },
    {
      name: "a lower-case bearer scheme is accepted (200): the scheme is case-insensitive",
      path: "/whoami",
      headers: { authorization: "bearer tok-alice" },
      expect: 200,
    },
    {
      name: "the Basic scheme is refused 401",
      path: "/sessions",
      headers: { authorization: "Basic tok-alice" },
      expect: 401,
    },
    {
      name: "a 10 KB bearer token is refused 401",
      path: "/sessions",
      headers: { authorization: `Bearer ${"x".repeat(10_000)}` },
      expect: 401,
    },
    {
      name: "/healthz without any token is served 200",
      path: "/healthz",
      headers: { "x-attach-token": "" },
      as: "none",
      expect: 200,
    },
    {
      name: "/healthz/ (trailing slash) without a token is refused 401",
      path: "/healthz/",
      as: "none",
      headers: { "x-attach-token": "" },
      expect: 401,
    },
  ];
  for (const attack of cases) {
    test(attack.name, async () => {
      expect(await caseProblems(tenant, attack)).toEqual([]);
    });
  }
});

describe("read-only mode", () => {
  test("reads are served; every write is refused 403", async () => {
    expect((await call(readonly, "/sessions")).status).toBe(200);
    expect((await call(readonly, "/sessions/default/inject", { ...inject, headers: json })).status).toBe(403);
    expect((await call(readonly, "/sessions", { method: "POST", headers: json })).status).toBe(403);
    expect((await call(readonly, "/sessions/x", { method: "DELETE", headers: json })).status).toBe(403);
  });

  test("mode changes, approvals, resets and resumes are refused 403; the session's mode stays ask", async () => {
    for (const [suffix, body] of [
      ["perms/mode", { mode: "yolo" }],
      ["perms/allow", { patterns: ["*"] }],
      ["perms/respond", { id: "x", decision: "allow-once" }],
      ["guardrails/reset", {}],
      ["resume", {}],
      ["pause", {}],
    ] as const) {
      const response = await postJson(`${readonly.baseUrl}/sessions/default/${suffix}`, body);
      expect([suffix, response.status]).toEqual([suffix, 403]);
      expect(((await response.json()) as { error: string }).error).toContain("read-only");
    }
    const acl = await call(readonly, "/sessions/default/acl", { method: "PATCH", headers: json, body: "{}" });
    expect(acl.status).toBe(403);
    const perms = (await (await call(readonly, "/sessions/default/perms")).json()) as { mode: string };
    expect(perms.mode).toBe("ask");
  });
});

describe("tokens never logged", () => {
  test("wrong tokens, caller tokens and the right token never reach the daemon's stderr or stdout, with --log-level=debug", async () => {
    const right = "RIGHT-TRANSPORT-7f3a9c";
    const caller = "RIGHT-CALLER-51be02";
    const dir = tempDir();
    writeFileSync(
      join(dir, "callers.json"),
      JSON.stringify({ callers: [{ identity: "alice", token_sha256: sha256Hex(caller) }] }),
    );
    const daemon = await startDaemon({
      args: [
        "--log-level=debug",
        "--multi-session",
        `--auth-table=${join(dir, "callers.json")}`,
        "--attach-token=SPAR_LOG_TOKEN",
      ],
      env: { SPAR_LOG_TOKEN: right },
    });
    const wrong = [
      "WRONG-XAT-a1b2",
      "WRONG-BEARER-c3d4",
      "WRONG-CALLER-e5f6",
      "WRONG-QUERY-a7b8",
      "WRONG-STREAM-c9d0",
      "WRONG-ASSERT-e1f2",
    ];
    const send = (path: string, headers: Record<string, string>, body?: unknown) =>
      fetch(`${daemon.baseUrl}${path}`, {
        method: body === undefined ? "GET" : "POST",
        headers: { "content-type": "application/json", ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }).then((response) => response.arrayBuffer().then(() => response.status));
    expect(await send("/sessions", { "x-attach-token": wrong[0] ?? "" })).toBe(401);
    expect(await send("/sessions", { authorization: `Bearer ${wrong[1]}` })).toBe(401);
    expect(await send("/sessions", { "x-attach-token": right, authorization: `Bearer ${wrong[2]}` })).toBe(401);
    expect(await send(`/nope?token=${wrong[3]}`, {})).toBe(401);
    expect(await send("/sessions/default/events", { "x-attach-token": wrong[4] ?? "" })).toBe(401);
    expect(
      await send("/whoami", {
        "x-attach-token": right,
        authorization: `Bearer ${caller}`,
        "x-asserted-caller": wrong[5] ?? "",
      }),
    ).toBe(401);
    expect(
      await send("/sessions", { "x-attach-token": right, authorization: `Bearer ${caller}` }, { sessionID: "logged" }),
    ).toBe(201);
    expect(
      await send(
        "/sessions/logged/inject",
        { "x-attach-token": right, authorization: `Bearer ${caller}` },
        { message: "a turn that logs" },
      ),
    ).toBe(200);
    // The turn that logs has run to its end before the daemon stops.
    await waitFor(
      async () => {
        const usage = await fetch(`${daemon.baseUrl}/sessions/logged/usage`, {
          headers: { "x-attach-token": right, authorization: `Bearer ${caller}` },
        });
        const { overall } = (await usage.json()) as { overall: { turns: number } };
        return overall.turns >= 1 ? true : undefined;
      },
      10_000,
      "the logged turn",
    );
    expect(await daemon.sigterm()).toBe(0);
    const output = `${daemon.log()}\n${await new Response(daemon.process.stdout).text()}`;
    expect(output).toContain("listening on");
    for (const secret of [right, caller, ...wrong]) expect([secret, output.includes(secret)]).toEqual([secret, false]);
  });
});
