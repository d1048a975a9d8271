/**
 * The watcher's sinks against real receivers: the daemon sink against a real `spar agent` with a
 * token table where the watcher is a proxy identity (the session is owned by the asserted on-call
 * owner; the inject carries the payload; shared mode; a 415 without the JSON media type), the
 * webhook sink v1 against a local Bun.serve receiver, and the dry-run printer.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { DaemonSink } from "../../../src/watcher/sinks/daemon-sink.ts";
import { DryRunSink } from "../../../src/watcher/sinks/dry-run-sink.ts";
import { WebhookSink } from "../../../src/watcher/sinks/webhook-sink.ts";
import { tempDir } from "../../support/daemon.ts";
import { type InProcessAgent, startInProcessAgent } from "../../support/in-process-agent.ts";
import { collect } from "../../support/sse-client.ts";
import { ONCALL_TOKEN, OWNER, WATCHER_ENV, triageAuthArgs } from "../../support/triage-daemon.ts";

const WATCHER_TOKEN = WATCHER_ENV.WATCHER_TOKEN;
const payload = {
  kind: "cluster-event",
  reason: "BackOff",
  namespace: "shop",
  kind_of_object: "Pod",
  name: "web-1",
  uid: "uid-1",
  message: "Back-off restarting failed container <none> & co",
  count: 1,
  cluster: "prod",
  context: {},
  type: "Warning",
};

let daemon: InProcessAgent;

beforeAll(async () => {
  daemon = await startInProcessAgent({
    args: triageAuthArgs(tempDir()),
    env: WATCHER_ENV,
  });
});

afterAll(async () => {
  await daemon.stop();
});

/** The first agent row of a session whose text mentions `needle`, read as the owner. */
async function injectedText(sessionId: string, needle: string): Promise<string> {
  const stream = collect(`${daemon.baseUrl}/sessions/${sessionId}/events?since=0`, {
    headers: { authorization: `Bearer ${ONCALL_TOKEN}` },
  });
  try {
    const frame = await stream.waitFor(
      (candidate) => candidate.event === "agent" && JSON.stringify(candidate.data).includes(needle),
      10_000,
    );
    const parts = ((frame.data.event as { Content?: { parts?: Array<{ text?: string }> } }).Content?.parts ?? []).map(
      (part) => part.text ?? "",
    );
    return parts.join("");
  } finally {
    stream.close();
  }
}

describe("daemon sink", () => {
  test("per-incident: POST /sessions as the asserted owner, then the payload injected as the message", async () => {
    const sink = new DaemonSink({ daemonUrl: daemon.baseUrl, token: WATCHER_TOKEN, owner: OWNER });
    const opened = await sink.open(payload);
    expect(opened.error).toBeUndefined();
    expect(opened.id).toMatch(/^sess-/);
    const sessions = (await (
      await fetch(`${daemon.baseUrl}/sessions`, { headers: { authorization: `Bearer ${ONCALL_TOKEN}` } })
    ).json()) as { sessions: Array<{ sessionID: string; user: string }> };
    expect(sessions.sessions.find((session) => session.sessionID === opened.id)?.user).toBe(OWNER);
    expect(JSON.parse(await injectedText(opened.id ?? "", "uid-1"))).toEqual(payload);
    const appended = await sink.append(opened.id ?? "", { kind: "resolved", uid: "uid-1" });
    expect(appended).toEqual({ ok: true });
  }, 20_000);

  test("shared mode injects into the target session without creating one", async () => {
    const created = await fetch(`${daemon.baseUrl}/sessions`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${WATCHER_TOKEN}`,
        "x-asserted-caller": OWNER,
      },
      body: JSON.stringify({ sessionID: "triage-shared" }),
    });
    expect(created.status).toBe(201);
    const sink = new DaemonSink({
      daemonUrl: daemon.baseUrl,
      token: WATCHER_TOKEN,
      owner: OWNER,
      targetSession: "triage-shared",
    });
    expect(await sink.open({ ...payload, uid: "uid-shared" })).toEqual({ id: "triage-shared" });
    expect(await injectedText("triage-shared", "uid-shared")).toContain('"uid":"uid-shared"');
  }, 20_000);

  test("the daemon refuses a body-less POST /sessions without the JSON media type (415): the sink always sends it", async () => {
    const bare = await fetch(`${daemon.baseUrl}/sessions`, {
      method: "POST",
      headers: { authorization: `Bearer ${WATCHER_TOKEN}`, "x-asserted-caller": OWNER },
    });
    expect(bare.status).toBe(415);
    expect(
      (await new DaemonSink({ daemonUrl: daemon.baseUrl, token: WATCHER_TOKEN, owner: OWNER }).createSession()).id,
    ).toMatch(/^sess-/);
  });

  test("errors carry the status and body; a wrong token opens nothing", async () => {
    const opened = await new DaemonSink({ daemonUrl: daemon.baseUrl, token: "wrong", owner: OWNER }).open(payload);
    expect(opened.id).toBeUndefined();
    expect(opened.error).toContain("HTTP 401");
    const unreachable = await new DaemonSink({ daemonUrl: "http://127.0.0.1:9", token: WATCHER_TOKEN }).open(payload);
    expect(unreachable.error).toContain("session create");
  });
});

describe("webhook sink v1", () => {
  test("open with the bare payload, append to /incidents/<id>/events, bearer token, local ids for stateless receivers", async () => {
    const received: Array<{ path: string; auth: string | null; type: string | null; body: unknown }> = [];
    let answerId = true;
    const server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      async fetch(request) {
        const path = new URL(request.url).pathname;
        received.push({
          path,
          auth: request.headers.get("authorization"),
          type: request.headers.get("content-type"),
          body: await request.json(),
        });
        if (path === "/hook/incidents")
          return answerId
            ? Response.json({ id: "inc/1", extra: true }, { status: 201 })
            : new Response("", { status: 202 });
        if (path.endsWith("/events")) return new Response(null, { status: 204 });
        return new Response("nope", { status: 404 });
      },
    });
    try {
      const base = `http://127.0.0.1:${server.port}/hook`;
      let told = 0;
      const sink = new WebhookSink({ sinkUrl: base, token: "hook-token", onLocalId: () => told++ });
      expect(await sink.open(payload)).toEqual({ id: "inc/1" });
      expect(await sink.append("inc/1", { kind: "resolved" })).toEqual({ ok: true });
      answerId = false;
      const local = await sink.open(payload);
      expect(local.id).toMatch(/^local-[0-9a-f]{32}$/);
      await sink.open(payload);
      expect(told).toBe(1);
      expect(received[0]).toEqual({
        path: "/hook/incidents",
        auth: "Bearer hook-token",
        type: "application/json",
        body: payload,
      });
      expect(received[1]?.path).toBe("/hook/incidents/inc%2F1/events");
      const failing = await new WebhookSink({
        sinkUrl: `http://127.0.0.1:${server.port}/other`,
        token: undefined,
      }).open(payload);
      expect(failing.error).toBe("open incident: HTTP 404: nope");
      expect(received.at(-1)?.auth).toBeNull();
    } finally {
      server.stop(true);
    }
  });
});

test("dry-run prints each payload under a session header, indented", async () => {
  const out: string[] = [];
  const sink = new DryRunSink((text) => out.push(text));
  expect(await sink.open(payload)).toEqual({ id: "dry-run-1" });
  await sink.append("dry-run-1", { kind: "resolved" });
  expect(out[0]).toBe(`--- dry-run payload for session "dry-run-1" ---\n${JSON.stringify(payload, null, 2)}\n`);
  expect(out[1]).toStartWith('--- dry-run payload for session "dry-run-1" ---\n{\n  "kind": "resolved"');
});
