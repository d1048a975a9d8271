/**
 * Resource exhaustion through event streams: one caller opening streams until the daemon runs
 * out of file descriptors. Per-caller and global caps refuse the stream past them with 429,
 * Retry-After and a JSON body before it opens; admins keep a reserve; health probes and ordinary
 * requests are served throughout; a closed stream frees its slot; /metrics counts refusals.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "../../src/surfaces/http/caller-auth.ts";
import { connect } from "node:net";
import { postJson, startDaemon, tempDir, waitFor } from "../support/daemon.ts";
import { type InProcessAgent, startInProcessAgent } from "../support/in-process-agent.ts";

const tokens = { owner: "tok-owner", viewer: "tok-viewer", other: "tok-other", root: "tok-root" };
let daemon: InProcessAgent;
let single: InProcessAgent;

beforeAll(async () => {
  const dir = tempDir();
  writeFileSync(
    join(dir, "callers.json"),
    JSON.stringify({
      callers: Object.entries(tokens).map(([identity, token]) => ({ identity, token_sha256: sha256Hex(token) })),
    }),
  );
  writeFileSync(
    join(dir, "config.json"),
    JSON.stringify({
      attach: { max_streams: 6, max_streams_per_caller: 3, multi_session: { auth: { admin_identities: ["root"] } } },
    }),
  );
  [daemon, single] = await Promise.all([
    startInProcessAgent({
      args: ["--multi-session", `--auth-table=${join(dir, "callers.json")}`, `--config=${join(dir, "config.json")}`],
    }),
    startInProcessAgent({ args: ["--attach-max-streams=2"] }),
  ]);
  const created = await postJson(
    `${daemon.baseUrl}/sessions`,
    { sessionID: "shared", viewers: ["viewer", "other"] },
    as("owner"),
  );
  expect(created.status).toBe(201);
});
afterAll(async () => {
  await Promise.all([daemon.stop(), single.stop()]);
});

const as = (who: keyof typeof tokens) => ({ authorization: `Bearer ${tokens[who]}` });

interface OpenStream {
  status: number;
  response: Response;
  close(): void;
}

const opened: OpenStream[] = [];

async function openStream(
  target: InProcessAgent,
  path: string,
  headers: Record<string, string> = {},
): Promise<OpenStream> {
  const abort = new AbortController();
  const response = await fetch(`${target.baseUrl}${path}`, { headers, signal: abort.signal });
  const stream = { status: response.status, response, close: () => abort.abort() };
  if (response.status === 200) opened.push(stream);
  return stream;
}

function closeAll(): void {
  for (const stream of opened.splice(0)) stream.close();
}

async function expectRefused(stream: OpenStream, words: string): Promise<void> {
  expect(stream.status).toBe(429);
  expect(stream.response.headers.get("retry-after")).toBe("5");
  expect(stream.response.headers.get("content-type")).toContain("application/json");
  const body = (await stream.response.json()) as { error: string; retry_after_seconds: number };
  expect(body.error).toContain(words);
  expect(body.retry_after_seconds).toBe(5);
}

const events = "/sessions/shared/events";

describe("per-caller cap", () => {
  test("a viewer past its cap is refused before the stream opens; others still get theirs", async () => {
    for (let index = 0; index < 3; index++) expect((await openStream(daemon, events, as("viewer"))).status).toBe(200);
    await expectRefused(await openStream(daemon, events, as("viewer")), "too many open streams for caller viewer");
    // /perms/stream counts against the same cap.
    await expectRefused(await openStream(daemon, "/sessions/shared/perms/stream", as("viewer")), "at most 3");
    expect((await openStream(daemon, events, as("other"))).status).toBe(200);
    closeAll();
  });

  test("closing a stream frees its slot", async () => {
    const streams = [];
    for (let index = 0; index < 3; index++) streams.push(await openStream(daemon, events, as("viewer")));
    await expectRefused(await openStream(daemon, events, as("viewer")), "viewer");
    streams[0]?.close();
    const reopened = await waitFor(
      async () => {
        const attempt = await openStream(daemon, events, as("viewer"));
        return attempt.status === 200 ? attempt : undefined;
      },
      5000,
      "a freed stream slot",
    );
    expect(reopened.status).toBe(200);
    closeAll();
  });
});

describe("global cap", () => {
  test("past the daemon's cap every caller is refused, an admin uses the reserve, probes and requests are served", async () => {
    for (const who of ["viewer", "viewer", "viewer", "other", "other", "other"] as const)
      expect((await openStream(daemon, events, as(who))).status).toBe(200);
    await expectRefused(await openStream(daemon, events, as("owner")), "maximum of 6 open streams");
    expect((await openStream(daemon, events, as("root"))).status).toBe(200);
    expect((await fetch(`${daemon.baseUrl}/healthz`)).status).toBe(200);
    expect((await fetch(`${daemon.baseUrl}/sessions/shared/status`, { headers: as("owner") })).status).toBe(200);
    expect(
      (await postJson(`${daemon.baseUrl}/sessions/shared/inject`, { message: "still served" }, as("owner"))).status,
    ).toBe(200);
    const metrics = await (await fetch(`${daemon.baseUrl}/metrics`, { headers: as("root") })).text();
    expect(metrics).toContain('spar_sse_streams_refused_total{cap="global_cap"} 1');
    expect(metrics).toMatch(/spar_sse_streams_refused_total\{cap="caller_cap"\} [1-9]/);
    expect(metrics).toContain("spar_sse_stream_cap 6");
    expect(metrics).toContain("spar_sse_stream_callers 3");
    closeAll();
  });

  test("a single-caller daemon caps all streams at --attach-max-streams", async () => {
    expect((await openStream(single, "/sessions/default/events")).status).toBe(200);
    expect((await openStream(single, "/sessions/default/perms/stream")).status).toBe(200);
    await expectRefused(await openStream(single, "/sessions/default/events"), "maximum of 2 open streams");
    expect((await fetch(`${single.baseUrl}/healthz`)).status).toBe(200);
    closeAll();
  });
});

describe("refusals are decided after the session checks", () => {
  test("a stream for a session the caller cannot see is still the masked 404, not a 429", async () => {
    for (let index = 0; index < 3; index++) expect((await openStream(daemon, events, as("viewer"))).status).toBe(200);
    const hidden = await openStream(daemon, "/sessions/nosuch/events", as("viewer"));
    expect(hidden.status).toBe(404);
    closeAll();
  });
});

describe("the per-caller cap users get without a flag or a config key", () => {
  test("with a caller table one caller holds 256 streams; the 257th is refused 429 (a real process, raw sockets)", async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, "callers.json"),
      JSON.stringify({ callers: [{ identity: "viewer", token_sha256: sha256Hex(tokens.viewer) }] }),
    );
    const plain = await startDaemon({ args: ["--multi-session", `--auth-table=${join(dir, "callers.json")}`] });
    const sockets: ReturnType<typeof connect>[] = [];
    try {
      expect((await postJson(`${plain.baseUrl}/sessions`, { sessionID: "s" }, as("viewer"))).status).toBe(201);
      // Raw sockets: a fetch client pools at most 256 connections per host, which would hide the cap.
      const open = () =>
        new Promise<string>((resolve) => {
          const socket = connect(plain.port, "127.0.0.1", () =>
            socket.write(
              `GET /sessions/s/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${tokens.viewer}\r\n\r\n`,
            ),
          );
          socket.on("error", () => {});
          socket.once("data", (chunk) => resolve(chunk.toString("latin1")));
          sockets.push(socket);
        });
      const answers: string[] = [];
      for (let index = 0; index < 257; index++) answers.push(await open());
      expect(answers.slice(0, 256).every((answer) => answer.startsWith("HTTP/1.1 200"))).toBe(true);
      expect(answers[256]).toStartWith("HTTP/1.1 429");
      expect(answers[256]).toContain("at most 256 at once");
    } finally {
      for (const socket of sockets) socket.destroy();
      await plain.sigterm();
    }
  });
});
