/**
 * Several `spar svc` daemons on one PostgreSQL database (issue 34; D492, D493): an incident is
 * served whole by the daemon that opened it (its coordinator session's lease covers its
 * specialists'), and an operator's request for it that reaches another daemon is committed there
 * and run by the serving one: an approval sent to a different daemon than the one that parked the
 * call runs it once (the counting MCP server says so); a pause or an abort sent to the other daemon
 * holds on the serving one; a daemon killed -9 with a parked call has its incident taken over by
 * the other, where one approval runs the call once; an incident its daemon's stop left interrupted
 * is resumed once by the daemon that takes it over, and by no other.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { countedCalls } from "../../fixtures/mcp/counting.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { type Daemon, waitFor } from "../../support/daemon.ts";
import {
  APPLY,
  type GatedWorkload,
  gatedDaemonOptions,
  gatedWorkload,
  injectIncident,
  postTo,
  resume,
} from "../../support/gated-workload.ts";
import { type PostgresCluster, startPostgresCluster } from "../../support/postgres-cluster.ts";
import { call, say, stall, writeScript } from "../../support/scripted.ts";
import { TOKEN } from "../../support/gated-workload.ts";

const scope = daemonScope();
let cluster: PostgresCluster;
let databases = 0;

beforeAll(() => {
  cluster = startPostgresCluster();
});
afterAll(() => cluster?.stop());

const PROPOSE = [call("worker", { request: "scale web to 10" }), call(APPLY, { replicas: 10 })];
const FINISH = [call("finish_task", { result: "done" }), say("handled")];

/** Rows of the incident's coordinator session committed so far. */
async function coordinatorRows(url: string, incident: string): Promise<number> {
  const sql = new SQL(url);
  try {
    const rows: { head: number }[] = await sql`SELECT head FROM spar_sessions WHERE app = 'svc' AND sid = ${incident}`;
    return rows[0]?.head ?? 0;
  } finally {
    await sql.close();
  }
}

/** The pid in the run id of the daemon holding the incident's lease (D490: host:pid:suffix). */
async function servingPid(url: string, incident: string): Promise<number> {
  const sql = new SQL(url);
  try {
    const rows: { holder: string }[] = await sql`SELECT l.holder FROM spar_session_leases l
      JOIN spar_sessions s ON s.pk = l.session_pk WHERE s.app = 'svc' AND s.sid = ${incident}`;
    return Number(rows[0]?.holder.split(":").at(-2));
  } finally {
    await sql.close();
  }
}

let url = "";

/** Two svc daemons on one fresh database, each with its own script (a daemon replays its own from the top). */
async function pair(workload: GatedWorkload, first: unknown[], second: unknown[]): Promise<[Daemon, Daemon]> {
  url = cluster.createDatabase(`svc_replicas_${++databases}`);
  const options = (lines: unknown[]) =>
    gatedDaemonOptions(workload, lines, {
      sessionDb: url,
      args: ["--session-db-driver=postgres", "--session-db-lease=3s"],
    });
  const a = await scope.start(options(first));
  const b = await scope.start(options(second));
  return [a, b];
}

test("an approval sent to the other daemon runs the parked call once, on the daemon serving the incident", async () => {
  const workload = gatedWorkload();
  const [a, b] = await pair(workload, [...PROPOSE, ...FINISH], [say("never used")]);
  const injected = await injectIncident(a, "k1");
  expect(injected.body.state).toBe("paused");
  const interruptId = injected.pending[0]?.interrupt_id ?? "";
  expect(interruptId).not.toBe("");

  const answered = await resume(b, "incident-k1", interruptId, { verdict: "approve" });
  expect(answered.status).toBe(202);
  expect(answered.body).toMatchObject({ outcome: "apply", state: "idle" });
  expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(1);
  // A second answer, to either daemon, runs nothing more.
  expect((await resume(a, "incident-k1", interruptId, { verdict: "approve" })).status).toBe(409);
  expect((await resume(b, "incident-k1", interruptId, { verdict: "approve" })).status).toBe(409);
  expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(1);
  expect(await servingPid(url, "incident-k1")).toBe(a.process.pid);
}, 60_000);

test("a pause and an abort sent to the other daemon hold on the daemon serving the incident", async () => {
  const workload = gatedWorkload();
  const [a, b] = await pair(workload, [...PROPOSE, say("unused")], [say("never used")]);
  expect((await injectIncident(a, "p1")).body.state).toBe("paused");
  const paused = await postTo(b, "/pause", { session_id: "incident-p1", reason: "operator" });
  expect(paused.status).toBe(200);
  const token = String(paused.body.token);
  // The serving daemon refuses the incident's turns while the pause holds.
  const refused = await injectIncident(a, "p1");
  expect(refused.status).toBe(409);
  expect(JSON.stringify(refused.body)).toContain("gate-paused");
  // The token, sent to the serving daemon, releases it: it knew the pause another daemon took for it.
  expect((await postTo(a, "/resume", { token })).status).toBe(202);

  const aborted = await postTo(b, "/abort", { session_id: "incident-p1", reason: "wrong cluster" });
  expect(aborted.status).toBe(202);
  const after = await injectIncident(a, "p1");
  expect(after.status).toBe(409);
  expect(JSON.stringify(after.body)).toContain("abort");
  expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(0);
}, 60_000);

test("kill -9 of the daemon serving an incident with a parked call: the other takes it over and one approval runs it once", async () => {
  const workload = gatedWorkload();
  const [a, b] = await pair(workload, [...PROPOSE, say("never delivered")], FINISH);
  const injected = await injectIncident(a, "k2");
  expect(injected.body.state).toBe("paused");
  const interruptId = injected.pending[0]?.interrupt_id ?? "";
  await a.kill9();

  const answered = await resume(b, "incident-k2", interruptId, { verdict: "approve" });
  expect(answered.status).toBe(202);
  expect(await servingPid(url, "incident-k2")).toBe(b.process.pid);
  expect(answered.body).toMatchObject({ outcome: "apply", state: "idle" });
  expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(1);
  expect((await resume(b, "incident-k2", interruptId, { verdict: "approve" })).status).toBe(409);
  expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(1);
}, 60_000);

test("a daemon stopped mid-turn (SIGTERM, its drain cut short by kill -9): the other takes the incident over and resumes it once", async () => {
  const url = cluster.createDatabase(`svc_replicas_${++databases}`);
  const trivial = (lines: unknown[]) => ({
    role: "svc" as const,
    sessionDb: url,
    args: ["--model=scripted", "--session-db-driver=postgres", "--session-db-lease=3s"],
    env: { SVC_SCRIPT: writeScript(lines), SVC_INJECT_TOKEN: TOKEN },
  });
  const a = await scope.start(trivial([stall("working", 120_000)]));
  const b = await scope.start(trivial([say("picked up")]));
  void postTo(a, "/inject", { uid: "r1" }).catch(() => undefined);
  await waitFor(async () => ((await servingPid(url, "incident-r1")) === a.process.pid ? true : undefined), 10_000, "a");
  // Its turn is under way: the stop marks it interrupted before the drain waits, then dies.
  await waitFor(async () => ((await coordinatorRows(url, "incident-r1")) >= 1 ? true : undefined), 10_000, "a row");
  a.process.kill("SIGTERM");
  await waitFor(() => (a.log().includes("marked interrupted before waiting") ? true : undefined), 15_000, "the marker");
  await a.kill9();

  await waitFor(
    () => (b.log().includes("auto-resume: incident-r1 (shutdown (SIGTERM)): resumed") ? true : undefined),
    15_000,
    "b resumes it",
  );
  await waitFor(
    () => (b.log().includes("auto-resume: incident-r1: marker cleared") ? true : undefined),
    15_000,
    "the marker cleared",
  );
  expect(await servingPid(url, "incident-r1")).toBe(b.process.pid);
  expect(b.log().match(/auto-resume: incident-r1 \(shutdown \(SIGTERM\)\): resumed/g)).toHaveLength(1);
}, 60_000);
