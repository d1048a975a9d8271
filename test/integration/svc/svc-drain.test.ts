/**
 * `spar svc`'s drain against the real daemon (spec: States and transitions `running` to
 * `interrupted`, Errors' exit codes): a session with a turn in flight is marked `interrupted` in
 * its store BEFORE the drain waits (the marker survives a kill -9 mid-drain); a turn that finishes
 * inside the window clears it and the daemon exits 0; a turn that outlives the window keeps it
 * and the daemon exits 3; `spar svc stop` (POST /stop) takes the same path with the marker
 * classified `operator stop: <reason>`; a hung unwind is ended by the teardown watchdog, exit 4.
 */
import { expect, test } from "bun:test";
import { type Daemon, postJson, sparCommand, waitFor } from "../../support/daemon.ts";
import { daemonScope, runToExit } from "../../support/daemon-scope.ts";
import { APPLY, TOKEN, gatedDaemonOptions, gatedWorkload, storedRows } from "../../support/gated-workload.ts";
import { auditRows } from "../../support/shape-workload.ts";
import { call, stall, writeScript } from "../../support/scripted.ts";

const scope = daemonScope();

const trivial = (lines: readonly unknown[], env: Record<string, string> = {}) =>
  scope.start({ role: "svc", args: ["--model=scripted"], env: { SVC_SCRIPT: writeScript(lines), ...env } });

async function metric(daemon: Daemon, series: string): Promise<number> {
  const text = await (
    await fetch(`${daemon.baseUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
  ).text();
  const line = text.split("\n").find((row) => row.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

/** Resolves once the turn's opening rows (at least `rows` of them) are committed: a turn is in flight. */
const turnStarted = (daemon: Daemon, rows = 1) =>
  waitFor(async () => ((await metric(daemon, "svc_store_event_rows")) >= rows ? true : undefined), 10_000, "a turn");

const logged = (daemon: Daemon, text: string, timeoutMs = 10_000) =>
  waitFor(() => (daemon.log().includes(text) ? true : undefined), timeoutMs, text);

async function coordinatorEvents(sessionDb: string, id: string) {
  return (await storedRows(sessionDb, "svc", id)).map((row) => row.event);
}

test("SIGTERM mid-turn, the turn finishes inside the window: marked interrupted before the wait, cleared, exit 0", async () => {
  const daemon = await trivial([stall("working", 2500, "done")]);
  const waiting = postJson(`${daemon.baseUrl}/inject`, { uid: "c1" });
  await turnStarted(daemon);
  daemon.process.kill("SIGTERM");
  expect((await waiting).status).toBe(202);
  expect(await daemon.process.exited).toBe(0);
  const rows = await storedRows(daemon.sessionDb, "svc", "incident-c1");
  const names = rows.map(({ event }) => (event.kind === "audit" ? event.name : event.kind));
  const marked = names.indexOf("svc-interrupted");
  // The marker is committed before the turn's answer (written before the drain waited), the clear after it.
  expect(marked).toBeGreaterThan(-1);
  expect(names.indexOf("model-response")).toBeGreaterThan(marked);
  expect(names.lastIndexOf("svc-interrupted-cleared")).toBeGreaterThan(names.indexOf("model-response"));
  const events = rows.map((row) => row.event);
  expect(auditRows(events, "svc-interrupted")).toMatchObject([
    { reason: "shutdown (SIGTERM)", pause_requested: false },
  ]);
  expect(auditRows(events, "svc-interrupted-cleared")).toMatchObject([
    { why: "the turn finished inside the drain window" },
  ]);
}, 30_000);

test("a kill -9 mid-drain leaves the marker in the store (it was durable before the wait); sessions list reads it as interrupted", async () => {
  const daemon = await trivial([stall("working", 20_000)]);
  void postJson(`${daemon.baseUrl}/inject`, { uid: "k1" }).catch(() => undefined);
  await turnStarted(daemon);
  daemon.process.kill("SIGTERM");
  await logged(daemon, "marked interrupted before waiting: incident-k1");
  await daemon.kill9();
  const events = await coordinatorEvents(daemon.sessionDb, "incident-k1");
  expect(auditRows(events, "svc-interrupted")).toHaveLength(1);
  expect(auditRows(events, "svc-interrupted-cleared")).toEqual([]);
  const listed = await runToExit(
    sparCommand("svc", "sessions", "list", `--session-db=${daemon.sessionDb}`, "--state=interrupted"),
  );
  expect(listed.code).toBe(0);
  expect(listed.stdout).toMatch(/incident-k1 .* interrupted +\(interrupted: shutdown \(SIGTERM\)\)\n/);
}, 30_000);

test("SIGTERM mid-turn, the window expires (30 s without a budget): the turn is cancelled, the marker stays, exit 3", async () => {
  const daemon = await trivial([stall("working", 120_000)]);
  void postJson(`${daemon.baseUrl}/inject`, { uid: "e1" }).catch(() => undefined);
  await turnStarted(daemon);
  daemon.process.kill("SIGTERM");
  expect(await daemon.process.exited).toBe(3);
  expect(daemon.log()).toContain("turns still running after the 30 s drain window: cancelled");
  expect(daemon.log()).toContain("interrupted sessions incident-e1");
  const events = await coordinatorEvents(daemon.sessionDb, "incident-e1");
  expect(auditRows(events, "svc-interrupted")).toMatchObject([{ reason: "shutdown (SIGTERM)" }]);
  expect(auditRows(events, "svc-interrupted-cleared")).toEqual([]);
}, 50_000);

test("a turn that parks on an approval inside the window clears its marker: the session reports paused, exit 0", async () => {
  const workload = gatedWorkload();
  const proposeLate = {
    request: {},
    responses: [
      {
        delayMs: 2000,
        content: { role: "model", parts: [{ functionCall: { name: APPLY, args: { replicas: 3 } } }] },
        turnComplete: true,
      },
    ],
  };
  const daemon = await scope.start(gatedDaemonOptions(workload, [call("worker", { request: "scale" }), proposeLate]));
  const waiting = postJson(`${daemon.baseUrl}/inject`, { uid: "q1" }, { authorization: `Bearer ${TOKEN}` });
  // The coordinator's prompt and delegation, then the worker's prompt: the worker's model call is under way.
  await turnStarted(daemon, 3);
  daemon.process.kill("SIGTERM");
  const answer = await waiting;
  expect(answer.status).toBe(202);
  expect(await answer.json()).toMatchObject({ state: "paused" });
  expect(await daemon.process.exited).toBe(0);
  const events = await coordinatorEvents(daemon.sessionDb, "incident-q1");
  expect(auditRows(events, "svc-interrupted")).toHaveLength(1);
  expect(auditRows(events, "svc-interrupted-cleared")).toHaveLength(1);
  const worker = (await storedRows(daemon.sessionDb, "svc.worker", "incident-q1")).map((row) => row.event);
  expect(auditRows(worker, "gate-interrupt")).toHaveLength(1);
}, 30_000);

test("spar svc stop --reason: 202 through the CLI, the marker says operator stop: <reason>, the daemon drains and exits 0", async () => {
  const daemon = await trivial([stall("working", 2500, "done")], { SVC_INJECT_TOKEN: TOKEN });
  const waiting = postJson(`${daemon.baseUrl}/inject`, { uid: "s1" }, { authorization: `Bearer ${TOKEN}` });
  await turnStarted(daemon);
  const stopped = await runToExit(sparCommand("svc", "stop", `--addr=${daemon.baseUrl}`, "--reason=deploy 42"), {
    env: { SVC_INJECT_TOKEN: TOKEN },
  });
  expect(stopped).toMatchObject({ code: 0, stderr: "" });
  expect(stopped.stdout).toBe(
    "stop accepted; daemon draining (bound 30s). Daemon exits 0 on a clean drain, 3 if the window expires with interrupted sessions.\n",
  );
  expect((await waiting).status).toBe(202);
  expect(await daemon.process.exited).toBe(0);
  expect(daemon.log()).toContain("stop requested by svc-inject");
  const events = await coordinatorEvents(daemon.sessionDb, "incident-s1");
  expect(auditRows(events, "svc-interrupted")).toMatchObject([{ reason: "operator stop: deploy 42" }]);
  expect(auditRows(events, "svc-interrupted-cleared")).toHaveLength(1);
}, 30_000);

test("spar svc stop: without the token it is refused (exit 1, the daemon's 401 named), an unreachable daemon names the address, a bad flag is exit 2", async () => {
  const daemon = await trivial([], { SVC_INJECT_TOKEN: TOKEN });
  const refused = await runToExit(sparCommand("svc", "stop", `--addr=${daemon.baseUrl}`), {
    env: { SVC_INJECT_TOKEN: "" },
  });
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain(
    "/stop: 401: missing or wrong inject token: send the value of SVC_INJECT_TOKEN as Authorization: Bearer <token>",
  );
  const unreachable = await runToExit(sparCommand("svc", "stop", "--addr=http://127.0.0.1:9"));
  expect(unreachable.code).toBe(1);
  expect(unreachable.stderr).toContain("no svc daemon answered at http://127.0.0.1:9");
  const usage = await runToExit(sparCommand("svc", "stop", "--pause"));
  expect(usage.code).toBe(2);
  expect(usage.stderr).toContain("--pause");
  expect(daemon.process.exitCode).toBeNull();
}, 30_000);

test("svc stop --pause-sessions: the markers carry pause_requested and each marked session is gate-paused by the daemon", async () => {
  const daemon = await trivial([stall("working", 2500, "done")], { SVC_INJECT_TOKEN: TOKEN });
  const waiting = postJson(`${daemon.baseUrl}/inject`, { uid: "p1" }, { authorization: `Bearer ${TOKEN}` });
  await turnStarted(daemon);
  const accepted = await postJson(
    `${daemon.baseUrl}/stop`,
    { reason: "maintenance", pause_sessions: true },
    { authorization: `Bearer ${TOKEN}` },
  );
  expect(accepted.status).toBe(202);
  expect(await accepted.json()).toEqual({ drain_bound: "30s" });
  expect((await waiting).status).toBe(202);
  expect(await daemon.process.exited).toBe(0);
  const events = await coordinatorEvents(daemon.sessionDb, "incident-p1");
  expect(auditRows(events, "svc-interrupted")).toMatchObject([
    { reason: "operator stop: maintenance", pause_requested: true },
  ]);
  expect(auditRows(events, "svc-pause")).toMatchObject([
    { reason: "operator", message: "operator stop: maintenance", by: "svc:internal" },
  ]);
  const listed = await runToExit(
    sparCommand("svc", "sessions", "list", `--session-db=${daemon.sessionDb}`, "--state=paused"),
  );
  expect(listed.stdout).toContain("(gate pause: operator, operator stop: maintenance, token expires ");
  const shown = await runToExit(
    sparCommand("svc", "sessions", "show", "incident-p1", `--session-db=${daemon.sessionDb}`),
  );
  expect(shown.stdout).toContain("State:      paused\n");
  expect(shown.stdout).toContain("Why:        gate pause: operator, operator stop: maintenance");
  expect(shown.stdout).toContain("Resume:     spar svc sessions resume --token=");
}, 30_000);

test("the teardown watchdog: an unwind that hangs past 15 s prints what is still open and forces exit 4", async () => {
  const daemon = await trivial([], { SPAR_FAILPOINTS: "svc.teardown.hang" });
  const started = Date.now();
  daemon.process.kill("SIGTERM");
  expect(await daemon.process.exited).toBe(4);
  expect(Date.now() - started).toBeGreaterThanOrEqual(14_500);
  const log = daemon.log();
  expect(log).toContain("teardown watchdog: the unwind after the drain did not finish within 15 s; still open:");
  expect(log).toContain("turn worker 0: idle");
  expect(log).toMatch(/main listener :\d+: \d+ open request\(s\)/);
  expect(log).toContain("forcing exit 4");
}, 30_000);
