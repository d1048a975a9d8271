/**
 * svc's operator attach surface (`--attach-listen`) as real clients see it: svc started with the
 * gated workload and `SVC_ATTACH_TOKEN`, an incident injected over the main listener parks on its
 * specialist's mutating call; over the attach surface the operator lists both sessions (the
 * coordinator's under `svc`, owned by `svc-inject`, and the specialist's under `svc.worker`,
 * owned by `svc:internal`) and reads their events over SSE with the `eventsource` package. On a
 * unix socket: Bun's fetch with `unix:`, the file owner-only, removed at shutdown, and a socket a
 * killed daemon left behind taken over at the next start. The `/slash/*` limiter answers there as
 * on the agent's listener. With `--ui-dir` the surface serves the dashboard and `/config` as the agent does.
 */
import { expect, test } from "bun:test";
import { existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Daemon } from "../../support/daemon.ts";
import { tempDir } from "../../support/daemon.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { APPLY, gatedDaemonOptions, gatedWorkload, injectIncident, resume } from "../../support/gated-workload.ts";
import { call, say } from "../../support/scripted.ts";
import { collect } from "../../support/sse-client.ts";

const scope = daemonScope();
const ATTACH_TOKEN = "attach-s3cret";
const OPERATOR = { authorization: `Bearer ${ATTACH_TOKEN}` };

/** The attach surface's base URL, from the line svc logs before its main listener's. */
function attachUrl(daemon: Daemon): string {
  const match = /attach surface at (http:\/\/[^ ]+) /.exec(daemon.log());
  if (!match?.[1]) throw new Error(`no attach surface in the log:\n${daemon.log()}`);
  return match[1];
}

interface Listed {
  app: string;
  user: string;
  sessionID: string;
}

const proposal = [
  call("worker", { request: "scale web to 3" }),
  call(APPLY, { replicas: 3 }),
  call("finish_task", { result: "scaled" }),
  say("handled"),
];

test("with SVC_ATTACH_TOKEN the operator lists every svc session and reads their events over SSE", async () => {
  const workload = gatedWorkload();
  const daemon = await scope.start(
    gatedDaemonOptions(workload, proposal, {
      args: ["--attach-listen=127.0.0.1:0"],
      env: { SVC_ATTACH_TOKEN: ATTACH_TOKEN },
    }),
  );
  const attach = attachUrl(daemon);
  const injected = await injectIncident(daemon, "a1");
  expect(injected.body.state).toBe("paused");

  const listed = await fetch(`${attach}/sessions`, { headers: OPERATOR });
  expect(listed.status).toBe(200);
  const sessions = ((await listed.json()) as { sessions: Listed[] }).sessions;
  expect(sessions).toContainEqual(
    expect.objectContaining({ app: "svc", sessionID: "incident-a1", user: "svc-inject" }),
  );
  expect(sessions).toContainEqual(
    expect.objectContaining({ app: "svc.worker", sessionID: "incident-a1", user: "svc:internal" }),
  );

  const coordinator = scope.defer(collect(`${attach}/sessions/svc/incident-a1/events`, { headers: OPERATOR }), (s) =>
    s.close(),
  );
  const capabilities = await coordinator.waitFor((frame) => frame.event === "capabilities");
  expect(capabilities.data).toMatchObject({ caller_id: "svc-attach", agent: { name: "gated" } });
  // Replayed from the log: the incident the main listener's inject committed.
  await coordinator.waitFor((frame) => frame.event === "agent" && JSON.stringify(frame.data).includes("ScaleUp"));
  const worker = scope.defer(collect(`${attach}/sessions/svc.worker/incident-a1/events`, { headers: OPERATOR }), (s) =>
    s.close(),
  );
  await worker.waitFor((frame) => frame.event === "agent" && JSON.stringify(frame.data).includes("apply_change"));

  // Live: the operator approves over the main listener; the turn that carries the answer out streams.
  const question = injected.pending[0];
  if (question === undefined) throw new Error("no question");
  const mark = coordinator.frames.length;
  expect((await resume(daemon, "incident-a1", question.interrupt_id, { verdict: "approve" })).status).toBe(202);
  await coordinator.waitFor((frame) => frame.event === "turn-complete", 10_000, mark);
  expect(coordinator.frames.slice(mark).some((frame) => JSON.stringify(frame.data).includes("handled"))).toBe(true);

  // The /slash/* limiter is the attach app's, so svc's surface has it too (D356): five back to
  // back pass (no plan to archive), the sixth is the JSON 429 with Retry-After.
  const replan = () =>
    fetch(`${attach}/sessions/svc/incident-a1/slash/replan`, {
      method: "POST",
      headers: { ...OPERATOR, "content-type": "application/json" },
      body: "{}",
    });
  for (let call = 0; call < 5; call++) {
    const passed = await replan();
    expect(await passed.json()).toMatchObject({ plan_was_active: false, _render: "text" });
  }
  const limited = await replan();
  expect(limited.status).toBe(429);
  const seconds = Number(limited.headers.get("retry-after"));
  expect(seconds).toBeGreaterThanOrEqual(1);
  expect(await limited.json()).toEqual({ error: "rate limited", retry_after_seconds: seconds });
}, 30_000);

test("on a unix socket: Bun's fetch reads the sessions, the file is owner-only and gone after SIGTERM", async () => {
  const directory = tempDir("spar-sock-");
  const socket = join(directory, "attach.sock");
  const daemon = await scope.start({ role: "svc", args: [`--attach-listen=unix:${socket}`] });
  expect(daemon.log()).toContain(`attach surface at unix:${socket} (no token)`);
  expect(statSync(socket).mode & 0o777).toBe(0o600);
  const injected = await fetch(`${daemon.baseUrl}/inject`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ uid: "u1", reason: "Ping" }),
  });
  expect(injected.status).toBe(202);
  const listed = await fetch("http://localhost/sessions", { unix: socket });
  expect(listed.status).toBe(200);
  const sessions = ((await listed.json()) as { sessions: Listed[] }).sessions;
  expect(sessions).toContainEqual(expect.objectContaining({ app: "svc", sessionID: "incident-u1", user: "local" }));
  const events = await fetch("http://localhost/sessions/svc/incident-u1/events", {
    unix: socket,
    signal: AbortSignal.timeout(5000),
  });
  expect(events.headers.get("content-type")).toContain("text/event-stream");
  const reader = events.body?.getReader();
  let text = "";
  // The turn has ended: its rows are replayed, the incident among them.
  while (reader && !text.includes("Ping")) {
    const chunk = await reader.read();
    if (chunk.done) break;
    text += new TextDecoder().decode(chunk.value);
  }
  await reader?.cancel();
  expect(text).toContain("event: agent");
  expect(await daemon.sigterm()).toBe(0);
  expect(existsSync(socket)).toBe(false);
}, 30_000);

test("a socket a killed daemon left behind is taken over at the next start", async () => {
  const directory = tempDir("spar-sock-");
  const socket = join(directory, "attach.sock");
  const sessionDb = join(directory, "s.db");
  const first = await scope.start({ role: "svc", sessionDb, args: [`--attach-listen=unix:${socket}`] });
  await first.kill9();
  expect(statSync(socket).isSocket()).toBe(true);
  const second = await scope.start({ role: "svc", sessionDb, args: [`--attach-listen=unix:${socket}`] });
  expect((await fetch("http://localhost/healthz", { unix: socket })).status).toBe(200);
  expect(await second.sigterm()).toBe(0);
}, 30_000);

test("--ui-dir and --attach-cors-origins serve the dashboard and its /config on svc's attach surface, behind its token", async () => {
  const ui = join(tempDir("spar-svc-ui-"), "web");
  mkdirSync(ui);
  writeFileSync(join(ui, "index.html"), "<!doctype html><p>svc dashboard</p>");
  const workload = gatedWorkload();
  const daemon = await scope.start(
    gatedDaemonOptions(workload, proposal, {
      args: ["--attach-listen=127.0.0.1:0", `--ui-dir=${ui}`, "--attach-cors-origins=https://dash.example.com"],
      env: { SVC_ATTACH_TOKEN: ATTACH_TOKEN },
    }),
  );
  const attach = attachUrl(daemon);
  const redirect = await fetch(`${attach}/ui`, { headers: OPERATOR, redirect: "manual" });
  expect([redirect.status, redirect.headers.get("location")]).toEqual([301, "/ui/"]);
  const page = await fetch(`${attach}/ui/`, { headers: OPERATOR });
  expect([page.status, page.headers.get("content-type"), await page.text()]).toEqual([
    200,
    "text/html;charset=utf-8",
    "<!doctype html><p>svc dashboard</p>",
  ]);
  const config = await fetch(`${attach}/config`, { headers: OPERATOR });
  expect(await config.json()).toEqual({
    mode: "proxy",
    api_prefix: "/",
    auth: { mode: "bearer", authenticated: true, identity: "svc-attach" },
    multi_daemon: false,
    backends: [],
  });
  expect((await fetch(`${attach}/ui/`)).status).toBe(401);
  const preflight = await fetch(`${attach}/sessions`, {
    method: "OPTIONS",
    headers: { origin: "https://dash.example.com", "access-control-request-method": "GET" },
  });
  expect([preflight.status, preflight.headers.get("access-control-allow-origin")]).toEqual([
    204,
    "https://dash.example.com",
  ]);
});
