/**
 * The liveness lock of a daemon run (D490) on a real PostgreSQL 15: when it cannot be taken at
 * once (an earlier connection of the same run still holds it, say a backend the server has not
 * yet noticed is cut off), the run does not count itself alive on a connection without it: the
 * next keepAlive takes it once it is free, so the run does not look dead to the other daemons.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { LIVENESS_CLASS, PostgresCluster } from "../../../src/store/postgres/postgres-cluster.ts";
import { type PostgresCluster as Server, startPostgresCluster } from "../../support/postgres-cluster.ts";

let server: Server;
let admin: SQL;

beforeAll(() => {
  server = startPostgresCluster("liveness");
  admin = new SQL(server.url, { max: 1 });
});
afterAll(async () => {
  await admin?.close();
  server?.stop();
});

async function held(runId: string): Promise<number> {
  const rows: { n: number }[] = await admin`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory'
    AND granted AND classid = ${LIVENESS_CLASS}::oid AND objid = hashtext(${runId})::oid AND objsubid = 2`;
  return rows[0]?.n ?? 0;
}

test("a liveness lock another connection still holds is taken by the next keepAlive once it is free", async () => {
  const runId = "host:1:liveness";
  const earlier = new SQL(server.url, { max: 2 });
  const later = new SQL(server.url, { max: 2 });
  const first = new PostgresCluster(earlier, runId);
  const second = new PostgresCluster(later, runId);
  try {
    await first.keepAlive();
    await second.keepAlive();
    expect(await held(runId)).toBe(1);
    // The earlier connection goes: the lock is free now.
    await first.close();
    expect(await held(runId)).toBe(0);
    await second.keepAlive();
    expect(await held(runId)).toBe(1);
  } finally {
    await second.close();
    await earlier.close();
    await later.close();
  }
});
