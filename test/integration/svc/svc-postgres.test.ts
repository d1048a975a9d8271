/**
 * `spar svc --session-db-driver=postgres` (issue 15 item 1): the gated workload on a real
 * PostgreSQL 15 cluster parks apply_change for approval; after kill -9 and a restart on the same
 * database the question is still pending with the same interrupt id, and one approval runs the
 * counting server's call once. An unreachable database fails the startup (exit 1) with the URL's
 * credentials redacted, within the connect timeout; `--session-db-pool` caps the connections a svc opens (D515).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL } from "bun";
import type { CommittedRow } from "../../../src/core/events.ts";
import { PostgresStore } from "../../../src/store/postgres/postgres-store.ts";
import { GateLedger } from "../../../src/svc/gate/gate-ledger.ts";
import { countedCalls } from "../../fixtures/mcp/counting.ts";
import { daemonScope, runToExit } from "../../support/daemon-scope.ts";
import { sparCommand } from "../../support/daemon.ts";
import { APPLY, gatedDaemonOptions, gatedWorkload, injectIncident, resume } from "../../support/gated-workload.ts";
import { type PostgresCluster, startPostgresCluster } from "../../support/postgres-cluster.ts";
import { call, say } from "../../support/scripted.ts";

const scope = daemonScope();
let cluster: PostgresCluster;

beforeAll(() => {
  cluster = startPostgresCluster();
});
afterAll(() => cluster?.stop());

const PROPOSE = [call("worker", { request: "scale web to 10" }), call(APPLY, { replicas: 10 })];
const FINISH = [call("finish_task", { result: "done" }), say("handled")];

async function storedRows(url: string, app: string, id: string): Promise<CommittedRow[]> {
  // A reader beside the daemon: it takes no writer lock.
  const store = await PostgresStore.open(url, { writerLock: false });
  try {
    return await store.read({ app, id }, 0, 10_000);
  } finally {
    await store.close();
  }
}

test("svc on postgres parks a gated call; after kill -9 and a restart the question is pending with the same id, and one approval runs it once", async () => {
  const url = cluster.createDatabase("svc_gate");
  const workload = gatedWorkload();
  const options = (lines: unknown[]) =>
    gatedDaemonOptions(workload, lines, { sessionDb: url, args: ["--session-db-driver=postgres"] });
  const daemon = await scope.start(options([...PROPOSE, ...FINISH]));
  expect(daemon.log()).toContain(`store postgres postgres://***@127.0.0.1:${cluster.port}/svc_gate`);
  const injected = await injectIncident(daemon, "k1");
  expect(injected.body.state).toBe("paused");
  const interruptId = injected.pending[0]?.interrupt_id ?? "";
  expect(interruptId).not.toBe("");
  await daemon.kill9();

  const ledger = GateLedger.fold(await storedRows(url, "svc.worker", "incident-k1"));
  expect(ledger.state()).toBe("paused");
  expect(ledger.pending().map((entry) => entry.call.interruptId)).toEqual([interruptId]);
  expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(0);

  const again = await scope.start(options(FINISH));
  const answered = await resume(again, "incident-k1", interruptId, { verdict: "approve" });
  expect(answered.status).toBe(202);
  expect(answered.body).toMatchObject({ outcome: "apply", state: "idle" });
  expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(1);
});

test("--session-db-pool caps the connections svc opens to its database, the liveness mark's among them (D515)", async () => {
  const url = cluster.createDatabase("svc_pool");
  const workload = gatedWorkload();
  const daemon = await scope.start(
    gatedDaemonOptions(workload, [...PROPOSE, ...FINISH], {
      sessionDb: url,
      args: ["--session-db-driver=postgres", "--session-db-pool=3"],
    }),
  );
  const injected = await injectIncident(daemon, "k1");
  expect(injected.body.state).toBe("paused");
  const answered = await resume(daemon, "incident-k1", injected.pending[0]?.interrupt_id ?? "", { verdict: "approve" });
  expect(answered.status).toBe(202);
  const sql = new SQL(url, { max: 1 });
  try {
    const [row] = (await sql`
      SELECT count(*)::int AS connections FROM pg_stat_activity
      WHERE datname = 'svc_pool' AND pid <> pg_backend_pid()`) as Array<{ connections: number }>;
    // The pool's three (the writer's own, the liveness mark's, one for reads) and the announcements' one (D490, D515).
    expect(row?.connections).toBeGreaterThanOrEqual(2);
    expect(row?.connections).toBeLessThanOrEqual(4);
  } finally {
    await sql.close();
  }
});

test("an unreachable postgres store fails the startup (exit 1), credentials redacted", async () => {
  const workload = gatedWorkload();
  const result = await runToExit(
    sparCommand(
      "svc",
      "--listen=127.0.0.1:0",
      `--workload=${workload.directory}`,
      "--session-db-driver=postgres",
      "--session-db=postgres://svc:hunter2@127.0.0.1:1/svc",
    ),
    { timeoutMs: 15_000 },
  );
  expect(result.code).toBe(1);
  expect(result.stderr).toContain("cannot open session store postgres://***@127.0.0.1:1/svc");
  expect(result.stderr).not.toContain("hunter2");
});
