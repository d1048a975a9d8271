/**
 * Boot auto-resume against the real daemon (spec: States and transitions; reference 6.3 point 8):
 * a session is left `interrupted` by a kill -9 mid-drain (its marker is durable before the drain
 * waits), and the next boot settles it with exactly one outcome, counted in
 * `svc_autoresume_total{workload,outcome}`: resumed (a dangling read-only call answered
 * `interrupted before completion` first), cleared, skipped_stale, skipped_superseded,
 * skipped_unsupported, skipped_ambiguous, skipped_loopbreak (across three restarts); a session
 * `svc stop --pause-sessions` marked is left to the operator.
 */
import { expect, test } from "bun:test";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { uuidv7 } from "../../../src/core/ids.ts";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.ts";
import { interruptedRow } from "../../../src/svc/ops/interruption-rows.ts";
import { type Daemon, type DaemonOptions, postJson, tempDir, waitFor } from "../../support/daemon.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { APPLY, READ, TOKEN, gatedDaemonOptions, gatedWorkload, storedRows } from "../../support/gated-workload.ts";
import { auditRows, shapeDaemonOptions, shapeWorkload } from "../../support/shape-workload.ts";
import { call, say, stall, writeScript } from "../../support/scripted.ts";

const scope = daemonScope();
const AUTH = { authorization: `Bearer ${TOKEN}` };

const trivialOptions = (sessionDb: string, lines: readonly unknown[], args: string[] = []): DaemonOptions => ({
  role: "svc",
  sessionDb,
  args: ["--model=scripted", ...args],
  env: { SVC_SCRIPT: writeScript(lines), SVC_INJECT_TOKEN: TOKEN },
});

async function metricsText(daemon: Daemon): Promise<string> {
  return await (await fetch(`${daemon.baseUrl}/metrics`, { headers: AUTH })).text();
}

const logged = (daemon: Daemon, text: string, timeoutMs = 15_000) =>
  waitFor(() => (daemon.log().includes(text) ? true : undefined), timeoutMs, text);

/** Rows committed so far (all sessions): the turn is under way once `rows` are. */
async function rowsAtLeast(daemon: Daemon, rows: number): Promise<void> {
  await waitFor(
    async () => {
      const line = (await metricsText(daemon)).split("\n").find((row) => row.startsWith("svc_store_event_rows "));
      return line !== undefined && Number(line.split(" ")[1]) >= rows ? true : undefined;
    },
    15_000,
    `${rows} rows`,
  );
}

/** SIGTERM a daemon with a turn in flight, wait for the markers, then kill -9 it mid-drain. */
async function killMidDrain(daemon: Daemon, stop?: Record<string, unknown>): Promise<void> {
  if (stop === undefined) daemon.process.kill("SIGTERM");
  else expect((await postJson(`${daemon.baseUrl}/stop`, stop, AUTH)).status).toBe(202);
  await logged(daemon, "marked interrupted before waiting");
  await daemon.kill9();
}

/** A trivial-workload session `incident-<uid>` left interrupted in a fresh store. */
async function interruptedTrivial(uid: string, stop?: Record<string, unknown>): Promise<string> {
  const sessionDb = join(tempDir(), "sessions.db");
  const daemon = await scope.start(trivialOptions(sessionDb, [stall("working", 120_000)]));
  void postJson(`${daemon.baseUrl}/inject`, { uid }, AUTH).catch(() => undefined);
  await rowsAtLeast(daemon, 1);
  await killMidDrain(daemon, stop);
  return sessionDb;
}

const series = (workload: string, outcome: string) =>
  `svc_autoresume_total{outcome="${outcome}",workload="${workload}"} 1`;

async function coordinator(sessionDb: string, uid: string) {
  return (await storedRows(sessionDb, "svc", `incident-${uid}`)).map((row) => row.event);
}

test("resumed: the next boot runs one continuation turn (counted, the attempt row first) and clears the marker", async () => {
  const sessionDb = await interruptedTrivial("r1");
  const daemon = await scope.start(trivialOptions(sessionDb, [say("picked up")]));
  await logged(daemon, "auto-resume: incident-r1 (shutdown (SIGTERM)): resumed");
  expect(await metricsText(daemon)).toContain(series("trivial", "resumed"));
  await logged(daemon, "auto-resume: incident-r1: marker cleared (the auto-resume turn ended)");
  expect(await daemon.sigterm()).toBe(0);
  const events = await coordinator(sessionDb, "r1");
  const kinds = events.map((event) => (event.kind === "audit" ? event.name : event.kind));
  const attempt = kinds.indexOf("svc-autoresume-attempt");
  const prompt = events.findIndex((event) => event.kind === "user-message" && event.text.startsWith("[auto-resume]"));
  expect(attempt).toBeGreaterThan(kinds.indexOf("svc-interrupted"));
  expect(prompt).toBeGreaterThan(attempt);
  expect(events.at(-2)).toMatchObject({ kind: "model-response", text: "picked up" });
  expect(auditRows(events, "svc-autoresume-attempt")).toMatchObject([{ attempt: 1 }]);
  expect(events.at(-1)).toMatchObject({ kind: "audit", name: "svc-interrupted-cleared" });
}, 40_000);

test("cleared: a transcript that already ends on a completed model turn only has its marker cleared", async () => {
  const sessionDb = join(tempDir(), "sessions.db");
  const first = await scope.start(trivialOptions(sessionDb, [say("all done")]));
  expect((await postJson(`${first.baseUrl}/inject`, { uid: "c1" }, AUTH)).status).toBe(202);
  expect(await first.sigterm()).toBe(0);
  // The kill -9 window between a turn's last answer and the drain's clear: the marker is left behind.
  const store = SqliteStore.open(sessionDb);
  const now = new Date().toISOString();
  await store.append({ app: "svc", id: "incident-c1" }, [
    interruptedRow(
      { id: uuidv7(), ts: now, invocationId: "svc-ops", author: "svc/ops" },
      { reason: "shutdown (SIGTERM)", pauseRequested: false },
    ),
  ]);
  await store.close();
  const daemon = await scope.start(trivialOptions(sessionDb, []));
  await logged(daemon, "auto-resume: incident-c1 (shutdown (SIGTERM)): cleared");
  expect(await metricsText(daemon)).toContain(series("trivial", "cleared"));
  expect(await daemon.sigterm()).toBe(0);
  const events = await coordinator(sessionDb, "c1");
  expect(events.at(-1)).toMatchObject({ kind: "audit", name: "svc-interrupted-cleared" });
  expect(events.filter((event) => event.kind === "user-message")).toHaveLength(1);
}, 40_000);

test("skipped_stale: a marker older than --auto-resume-window is not driven and stays", async () => {
  const sessionDb = await interruptedTrivial("s1");
  // Time under test: the marker grows older than the one-second window.
  await Bun.sleep(1200);
  const daemon = await scope.start(trivialOptions(sessionDb, [], ["--auto-resume-window=1s"]));
  await logged(daemon, "auto-resume: incident-s1 (shutdown (SIGTERM)): skipped_stale");
  expect(await metricsText(daemon)).toContain(series("trivial", "skipped_stale"));
  expect(await daemon.sigterm()).toBe(0);
  const events = await coordinator(sessionDb, "s1");
  expect(auditRows(events, "svc-interrupted-cleared")).toEqual([]);
}, 40_000);

test("skipped_superseded: a turn someone else ran on the session since the interruption supersedes the resume", async () => {
  const sessionDb = await interruptedTrivial("u1");
  const between = await scope.start(trivialOptions(sessionDb, [say("new incident handled")], ["--auto-resume=false"]));
  await logged(between, "auto-resume off: --auto-resume=false");
  expect((await postJson(`${between.baseUrl}/inject`, { uid: "u1" }, AUTH)).status).toBe(202);
  expect(await between.sigterm()).toBe(0);
  const daemon = await scope.start(trivialOptions(sessionDb, []));
  await logged(daemon, "auto-resume: incident-u1 (shutdown (SIGTERM)): skipped_superseded");
  expect(await metricsText(daemon)).toContain(series("trivial", "skipped_superseded"));
  expect(await daemon.sigterm()).toBe(0);
  expect((await coordinator(sessionDb, "u1")).at(-1)).toMatchObject({ name: "svc-interrupted-cleared" });
}, 40_000);

test("skipped_unsupported: only coordinator dispatch is driven (a bounded workload's session is left)", async () => {
  const directory = shapeWorkload(
    ["name: verdict", "dispatch: bounded", "specialists:", "  - judge"],
    {
      judge: { front: ["mode: SingleTurn", "output_schema: ../verdict.json"], instruction: "Rate it." },
    },
    { "verdict.json": JSON.stringify({ type: "object", properties: { severity: { type: "string" } } }) },
  );
  const sessionDb = join(tempDir(), "sessions.db");
  const first = await scope.start(shapeDaemonOptions(directory, [stall("rating", 120_000)], { sessionDb }));
  void postJson(`${first.baseUrl}/inject`, { uid: "b1" }, AUTH).catch(() => undefined);
  await rowsAtLeast(first, 2);
  await killMidDrain(first);
  const daemon = await scope.start(shapeDaemonOptions(directory, [], { sessionDb }));
  await logged(daemon, "auto-resume: incident-b1 (shutdown (SIGTERM)): skipped_unsupported");
  expect(await metricsText(daemon)).toContain(series("verdict", "skipped_unsupported"));
}, 40_000);

/** A gated session whose worker is stuck in `tool` (held by the counting server), left interrupted. */
async function interruptedInCall(uid: string, tool: "read_status" | "apply_change", onMutation?: string) {
  const workload = gatedWorkload(onMutation === undefined ? {} : { onMutation });
  writeFileSync(join(workload.countDir, `${tool}.block`), "");
  const sessionDb = join(tempDir(), "sessions.db");
  const proposed = tool === "read_status" ? call(READ, {}) : call(APPLY, { replicas: 4 });
  const first = await scope.start(
    gatedDaemonOptions(workload, [call("worker", { request: "look" }), proposed], { sessionDb }),
  );
  void postJson(`${first.baseUrl}/inject`, { uid }, AUTH).catch(() => undefined);
  await waitFor(() => (existsSync(join(workload.countDir, `${tool}.calls`)) ? true : undefined), 15_000, "the call");
  await killMidDrain(first);
  rmSync(join(workload.countDir, `${tool}.block`));
  return { workload, sessionDb };
}

test("resumed after repair: a dangling read-only call (and the delegation cut with it) is answered `interrupted before completion`", async () => {
  const { workload, sessionDb } = await interruptedInCall("d1", "read_status");
  const daemon = await scope.start(gatedDaemonOptions(workload, [say("recovered")], { sessionDb }));
  await logged(daemon, "auto-resume: incident-d1 (shutdown (SIGTERM)): resumed");
  expect(await metricsText(daemon)).toContain(series("gated", "resumed"));
  await logged(daemon, "auto-resume: incident-d1: marker cleared");
  expect(await daemon.sigterm()).toBe(0);
  const repaired = { kind: "tool-result", output: { error: "interrupted before completion", repaired: true } };
  const worker = (await storedRows(sessionDb, "svc.worker", "incident-d1")).map((row) => row.event);
  expect(worker.filter((event) => event.kind === "tool-result")).toMatchObject([{ ...repaired, name: READ }]);
  const events = await coordinator(sessionDb, "d1");
  expect(events.filter((event) => event.kind === "tool-result")).toMatchObject([{ ...repaired, name: "worker" }]);
  expect(events.filter((event) => event.kind === "model-response").at(-1)).toMatchObject({ text: "recovered" });
}, 50_000);

test("skipped_ambiguous: a dangling mutating call is never re-driven; the marker stays for ack-effects", async () => {
  const { workload, sessionDb } = await interruptedInCall("a1", "apply_change", "apply");
  const daemon = await scope.start(gatedDaemonOptions(workload, [], { sessionDb }));
  await logged(daemon, "auto-resume: incident-a1 (shutdown (SIGTERM)): skipped_ambiguous");
  expect(await metricsText(daemon)).toContain(series("gated", "skipped_ambiguous"));
  expect(await daemon.sigterm()).toBe(0);
  expect(auditRows(await coordinator(sessionDb, "a1"), "svc-interrupted-cleared")).toEqual([]);
}, 50_000);

test("skipped_loopbreak: three restarts each resume and die mid-turn; the fourth boot stops driving the session", async () => {
  const sessionDb = await interruptedTrivial("l1");
  for (let restart = 1; restart <= 3; restart++) {
    const daemon = await scope.start(trivialOptions(sessionDb, [stall("again", 120_000)]));
    await logged(daemon, "auto-resume: incident-l1 (shutdown (SIGTERM)): resumed");
    await rowsAtLeast(daemon, 1);
    await daemon.kill9();
  }
  const daemon = await scope.start(trivialOptions(sessionDb, []));
  await logged(daemon, "auto-resume: incident-l1 (shutdown (SIGTERM)): skipped_loopbreak");
  expect(await metricsText(daemon)).toContain(series("trivial", "skipped_loopbreak"));
  expect(await daemon.sigterm()).toBe(0);
  const events = await coordinator(sessionDb, "l1");
  expect(auditRows(events, "svc-autoresume-attempt").map((row) => row.attempt)).toEqual([1, 2, 3]);
  expect(auditRows(events, "svc-interrupted-cleared")).toEqual([]);
}, 60_000);

test("a session marked by svc stop --pause-sessions is left to the operator: not driven, not counted", async () => {
  const sessionDb = await interruptedTrivial("p1", { reason: "maint", pause_sessions: true });
  const daemon = await scope.start(trivialOptions(sessionDb, []));
  await logged(daemon, "auto-resume: incident-p1 was paused by svc stop --pause-sessions: left to the operator");
  expect(await metricsText(daemon)).not.toContain("svc_autoresume_total{");
}, 40_000);
