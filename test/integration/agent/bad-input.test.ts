/**
 * Bad input gets a clear JSON error and loses nothing: size limit, malformed JSON, wrong types,
 * unknown sessions, paths and methods, missing media type; then a fuzz pass over every JSON
 * endpoint (random and boundary bodies) that must never produce a 500 or stop the daemon.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { postJson, waitFor } from "../../support/daemon.ts";
import { type InProcessAgent, startInProcessAgent } from "../../support/in-process-agent.ts";
import { rawHttp } from "../../support/raw-http.ts";
import { collect } from "../../support/sse-client.ts";

// The daemon's own wiring in this process: its listener for the raw-socket cases, `handle` for the fuzz.
let daemon: InProcessAgent;
beforeAll(async () => {
  daemon = await startInProcessAgent({ args: ["--multi-session"] });
});
afterAll(async () => {
  await daemon.stop();
});

async function expectError(response: Response, status: number, mentions: string): Promise<void> {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/json");
  const body = (await response.json()) as { error: string };
  expect(typeof body.error).toBe("string");
  expect(body.error.toLowerCase()).toContain(mentions.toLowerCase());
}

const inject = () => `${daemon.baseUrl}/sessions/default/inject`;

test("no Host header (HTTP/1.0) is served, URLs it builds are bare paths; a malformed Host is a JSON 400, never an HTML page", async () => {
  const health = await rawHttp(daemon.port, "GET /healthz HTTP/1.0\r\n\r\n");
  expect(health.status).toBe(200);
  expect(JSON.parse(health.body)).toMatchObject({ ok: true });
  const body = JSON.stringify({ sessionID: "no-host" });
  const created = await rawHttp(
    daemon.port,
    `POST /sessions HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
  );
  expect(created.status).toBe(201);
  expect(JSON.parse(created.body)).toMatchObject({ sessionID: "no-host", url: "/sessions/spar/no-host" });
  const unknown = await rawHttp(daemon.port, "GET /nope HTTP/1.0\r\n\r\n");
  expect(unknown.status).toBe(404);
  expect(unknown.headers["content-type"]).toContain("application/json");
  expect(JSON.parse(unknown.body)).toEqual({ error: "no such endpoint: GET /nope" });
  for (const host of ["a b", "[::1", "x:99999", "user@evil.example"]) {
    for (const path of ["/healthz", "/sessions", "/nope"]) {
      const answer = await rawHttp(daemon.port, `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      expect([path, host, answer.status]).toEqual([path, host, 400]);
      expect(answer.headers["content-type"]).toContain("application/json");
      expect(answer.body).toContain("invalid Host header");
    }
  }
  expect((await fetch(`${daemon.baseUrl}/healthz`)).status).toBe(200);
});

test("each kind of bad request gets its status and a JSON body naming the problem", async () => {
  await expectError(await postJson(inject(), { message: "x".repeat(8 * 1024) }), 413, "larger than 8192");
  await expectError(await postJson(inject(), '{"message": '), 400, "malformed JSON");
  await expectError(await postJson(inject(), { message: 42 }), 400, "message");
  await expectError(await postJson(inject(), { message: "hi", wake: "yes" }), 400, "wake");
  await expectError(await postJson(inject(), { message: "   " }), 400, "empty");
  await expectError(await postJson(inject()), 400, "empty");
  await expectError(await postJson(inject(), [1, 2]), 400, "invalid");
  await expectError(await postJson(`${daemon.baseUrl}/sessions/nope/inject`, { message: "hi" }), 404, "not found");
  await expectError(await fetch(`${daemon.baseUrl}/sessions/%00%01/status`), 404, "not found");
  await expectError(await fetch(`${daemon.baseUrl}/no/such/path`), 404, "no such endpoint");
  const wrongMethod = await fetch(inject(), { method: "PUT", headers: { "content-type": "application/json" } });
  expect(wrongMethod.headers.get("allow")).toContain("POST");
  await expectError(wrongMethod, 405, "not allowed");
  await expectError(
    await fetch(inject(), { method: "POST", body: JSON.stringify({ message: "hi" }) }),
    415,
    "application/json",
  );
  await expectError(
    await fetch(inject(), { method: "POST", headers: { "content-type": "text/plain" }, body: "hi" }),
    415,
    "application/json",
  );
  await expectError(
    await postJson(`${daemon.baseUrl}/sessions/default/events?protocol=banana`, undefined),
    405,
    "not allowed",
  );
  const badVersion = await fetch(`${daemon.baseUrl}/sessions/default/events?protocol=banana`);
  expect(badVersion.headers.get("x-attach-protocol-version")).toBe("1.16.0");
  await expectError(badVersion, 400, "malformed protocol version");
  await expectError(
    await fetch(`${daemon.baseUrl}/sessions/default/events`, { headers: { "x-attach-protocol-version": "2.0.0" } }),
    409,
    "major 2",
  );
  // An empty declaration declares nothing (accepted), as the spec says of declaring nothing.
  for (const declared of [
    `${daemon.baseUrl}/sessions/default/events?protocol=`,
    `${daemon.baseUrl}/sessions/default/events?protocol=%20`,
  ]) {
    const abort = new AbortController();
    const accepted = await fetch(declared, { signal: abort.signal, headers: { "x-attach-protocol-version": "" } });
    abort.abort();
    expect(accepted.status).toBe(200);
  }
  const invalidUtf8 = await fetch(inject(), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]),
  });
  await expectError(invalidUtf8, 400, "UTF-8");
  // Nothing of the refused requests reached the session.
  const usage = (await (await fetch(`${daemon.baseUrl}/sessions/default/usage`)).json()) as {
    overall: { turns: number };
  };
  expect(usage.overall.turns).toBe(0);
});

function randomString(random: () => number, length: number): string {
  const alphabet = ["a", "é", "\u0000", "\n", '"', "\\", "😀", "\u202e", " ", "{", "}", "\ud800"];
  let out = "";
  for (let i = 0; i < length; i++) out += alphabet[Math.floor(random() * alphabet.length)];
  return out;
}

function randomValue(random: () => number, depth: number): unknown {
  const pick = Math.floor(random() * (depth > 4 ? 6 : 8));
  switch (pick) {
    case 0:
      return null;
    case 1:
      return random() < 0.5;
    case 2:
      return [0, -1, 1e308, -0, 2 ** 53 + 1, 3.14][Math.floor(random() * 6)];
    case 3:
      return randomString(random, Math.floor(random() * 40));
    case 4:
      return randomString(random, Math.floor(random() * 9000));
    case 5:
      return "";
    case 6:
      return Array.from({ length: Math.floor(random() * 4) }, () => randomValue(random, depth + 1));
    default: {
      const keys = [
        "message",
        "wake",
        "prompt",
        "target",
        "sessionID",
        "app",
        "viewers",
        "contributors",
        "owner",
        "mode",
        "steer",
        "hold",
        "reason",
        "focus",
        "model",
        "decision",
        "x",
      ];
      const object: Record<string, unknown> = {};
      for (let i = 0; i < Math.floor(random() * 4); i++)
        object[keys[Math.floor(random() * keys.length)] ?? "x"] = randomValue(random, depth + 1);
      return object;
    }
  }
}

function randomBody(random: () => number): string | Uint8Array {
  const kind = random();
  if (kind < 0.1) return "[".repeat(4000) + "]".repeat(4000);
  if (kind < 0.2)
    return new Uint8Array(Array.from({ length: Math.floor(random() * 64) }, () => Math.floor(random() * 256)));
  if (kind < 0.3) return JSON.stringify(randomValue(random, 0)).slice(0, Math.floor(random() * 50));
  return JSON.stringify(randomValue(random, 0)) ?? "null";
}

test("fuzz: random and boundary bodies on every JSON endpoint never produce a 500, and the daemon keeps serving", async () => {
  let seed = 20261121;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  // Every JSON POST endpoint but /pricing/refresh (it reads the URL or file a body names) and
  // PATCH /acl (a valid owner would lock this caller out; its bad input is tested with auth).
  const endpoints = [
    "/sessions",
    "/sessions/default/inject",
    "/sessions/default/wake",
    "/sessions/spar/default/inject",
    "/sessions/default/pause",
    "/sessions/default/interrupt",
    "/sessions/default/resume",
    "/sessions/default/perms/respond",
    "/sessions/default/perms/mode",
    "/sessions/default/perms/allow",
    "/sessions/default/perms/deny",
    "/sessions/default/guardrails/reset",
    "/sessions/default/slash/compact",
    "/sessions/default/pricing/set",
    "/sessions/default/reload",
  ];
  const statuses = new Map<number, number>();
  let cases = 0;
  for (let round = 0; round < 60; round++) {
    await Promise.all(
      endpoints.map(async (path) => {
        const response = await daemon.handle(
          new Request(`${daemon.baseUrl}${path}`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: randomBody(random),
          }),
        );
        await response.arrayBuffer();
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        cases++;
        expect(response.status).not.toBe(500);
        expect(response.headers.get("content-type") ?? "application/json").toContain("application/json");
      }),
    );
  }
  expect(cases).toBe(60 * endpoints.length);
  console.log(`fuzz: ${cases} cases, statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
  // The fuzz may have parked the session (/pause, /interrupt): release it first.
  expect((await postJson(`${daemon.baseUrl}/sessions/default/resume`, { mode: "continue" })).status).toBe(200);
  const before = (await (await fetch(`${daemon.baseUrl}/sessions/default/usage`)).json()) as {
    overall: { turns: number };
  };
  // Live only (a cursor past the head): the turn that takes this message, whatever the fuzz queued before it.
  const live = collect(`${daemon.baseUrl}/sessions/default/events?since=9223372036854775807`);
  await live.waitFor((frame) => frame.event === "capabilities");
  const ok = await postJson(inject(), { message: "still alive" });
  expect(ok.status).toBe(200);
  const { prompt_id } = (await ok.json()) as { prompt_id: string };
  const asked = await live.waitFor(
    (frame) =>
      frame.event === "agent" &&
      (
        (frame.data.event as { CustomMetadata?: { prompt_ids?: string[] } | null }).CustomMetadata?.prompt_ids ?? []
      ).includes(prompt_id),
    10_000,
  );
  await live.waitFor((frame) => frame.event === "turn-complete", 10_000, live.frames.indexOf(asked));
  live.close();
  await waitFor(
    async () => {
      const usage = (await (await fetch(`${daemon.baseUrl}/sessions/default/usage`)).json()) as {
        overall: { turns: number };
      };
      return usage.overall.turns > before.overall.turns ? true : undefined;
    },
    10_000,
    "turn after fuzz",
  );
  expect((await fetch(`${daemon.baseUrl}/healthz`)).status).toBe(200);
}, 60_000);
