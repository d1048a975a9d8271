/**
 * The operator CLI's read verbs on a PostgreSQL store (issue 16 items 6 and 7): the gated workload
 * runs on a real PostgreSQL 15 cluster; `list`, `show` and `export-decisions` with
 * `--session-db-driver=postgres` read it in read-only transactions while the daemon serves it and
 * after it is gone. A database without spar's schema is refused, the URL's credentials redacted,
 * and the reader creates nothing in it.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL } from "bun";
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

const propose = (replicas: number) => [
  call("worker", { request: `scale web to ${replicas}` }),
  call(APPLY, { replicas }),
];
const FINISH = [call("finish_task", { result: "done" }), say("handled")];

function cli(url: string, ...args: string[]) {
  return runToExit(sparCommand("svc", "sessions", ...args, `--session-db=${url}`, "--session-db-driver=postgres"), {
    timeoutMs: 20_000,
  });
}

test("list, show and export-decisions read a postgres store while the daemon serves it and after it is gone", async () => {
  const url = cluster.createDatabase("svc_read");
  const workload = gatedWorkload();
  const daemon = await scope.start(
    gatedDaemonOptions(workload, [...propose(10), ...FINISH, ...propose(4), say("nothing to do")], {
      sessionDb: url,
      args: ["--session-db-driver=postgres"],
    }),
  );
  const first = await injectIncident(daemon, "p1");
  const approved = await resume(daemon, "incident-p1", first.pending[0]?.interrupt_id ?? "", { verdict: "approve" });
  expect(approved.body.state).toBe("idle");
  const second = await injectIncident(daemon, "p2");
  const waiting = second.pending[0]?.interrupt_id ?? "";
  expect(waiting).toMatch(/^gate-/);

  const live = await cli(url, "list");
  expect(live.stderr).toBe("");
  expect(live.code).toBe(0);
  expect(live.stdout).toMatch(new RegExp(`incident-p2 +svc-inject +svc +\\S+ +paused +${waiting}\\n`));
  expect(live.stdout).toMatch(/incident-p1 +svc-inject +svc +\S+ +idle\n/);
  // The daemon still serves the store the reader read.
  const after = await injectIncident(daemon, "p3");
  expect(after.status).toBe(202);
  expect(after.body.state).toBe("idle");
  await daemon.kill9();

  const shown = await cli(url, "show", "incident-p2");
  expect(shown.code).toBe(0);
  expect(shown.stdout).toContain(`  Interrupt: ${waiting}\n`);
  expect(shown.stdout).toContain("  Message:   Approve mutating call apply_change(replicas=4)?\n");
  const exported = await cli(url, "export-decisions", "--include-approver");
  expect(exported.code).toBe(0);
  const [header, record, ...rest] = exported.stdout
    .trimEnd()
    .split("\n")
    .map((line) => JSON.parse(line));
  expect(header._meta).toMatchObject({
    schema: "svc.decision/v1",
    source: `postgres://***@127.0.0.1:${cluster.port}/svc_read`,
    records: 1,
  });
  expect(record).toMatchObject({ session: "incident-p1", outcome: "approve", disposition: "authorized" });
  expect(rest).toEqual([]);
});

test("a database without spar's schema is refused (exit 1, credentials redacted) and left without tables", async () => {
  const url = cluster.createDatabase("not_spar");
  const withPassword = url.replace("postgres@", "postgres:hunter2@");
  const result = await cli(withPassword, "list");
  expect(result.code).toBe(1);
  expect(result.stderr).toContain(`postgres://***@127.0.0.1:${cluster.port}/not_spar holds no spar session store`);
  expect(result.stderr).not.toContain("hunter2");
  const sql = new SQL(url);
  try {
    const tables: unknown[] = await sql`SELECT tablename FROM pg_tables WHERE schemaname = 'public'`;
    expect(tables).toEqual([]);
  } finally {
    await sql.close();
  }
});
