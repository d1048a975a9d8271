/**
 * PostgresCluster's failures when the database cannot be reached (D529): every lease and command
 * operation fails as the store's reads do, `unavailable` (a JSON 503 naming the session store),
 * never a bare driver error that a listener would answer with a 500. A closed port stands in for
 * a stopped server: nothing listens there, so no PostgreSQL is needed.
 */
import { afterAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { SparError } from "../../../src/core/errors.ts";
import { PostgresCluster } from "../../../src/store/postgres/postgres-cluster.ts";

/** A port nothing listens on: one the system gave and took back. */
function closedPort(): number {
  const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = server.port;
  server.stop(true);
  return port;
}

const sql = new SQL(`postgres://postgres@127.0.0.1:${closedPort()}/spar`, { max: 2, connectionTimeout: 2 });
const cluster = new PostgresCluster(sql, "test-run");
afterAll(async () => {
  await cluster.close();
  await sql.close();
});

const key = { app: "spar", id: "s1" };
const operations: Record<string, () => Promise<unknown>> = {
  keepAlive: () => cluster.keepAlive(),
  acquireLease: () => cluster.acquireLease(key, 3000),
  renewLeases: () => cluster.renewLeases(3000),
  releaseLease: () => cluster.releaseLease(key, true),
  lapsedLeases: () => cluster.lapsedLeases(10),
  postCommand: () => cluster.postCommand(key, "inject", "{}"),
  pendingCommands: () => cluster.pendingCommands(key),
  completeCommand: () => cluster.completeCommand(1, "{}"),
  commandResult: () => cluster.commandResult(1),
};

for (const [name, run] of Object.entries(operations))
  test(`${name} against an unreachable database fails unavailable, naming the session store`, async () => {
    const error = await run().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(SparError);
    expect((error as SparError).code).toBe("unavailable");
    expect((error as SparError).message).toContain("session store unavailable");
  });
