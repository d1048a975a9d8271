/**
 * Relayed commands across several `spar agent` daemons on one PostgreSQL 15 database (D489,
 * D530): a command committed for a holder that stopped answering (its process frozen: its
 * connections live, so its lease must expire) whose receiver died too is run by the daemon that
 * next takes the session over, even when that daemon takes it to answer a request of its own,
 * and before that request: messages keep the order they were committed in.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL } from "bun";
import type { SessionEvent } from "../../../src/core/events.ts";
import { startReplica, storedRows } from "../../support/agent-replicas.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { type Daemon, postJson, waitFor } from "../../support/daemon.ts";
import { type PostgresCluster, startPostgresCluster } from "../../support/postgres-cluster.ts";

const scope = daemonScope();
let cluster: PostgresCluster;

beforeAll(() => {
  cluster = startPostgresCluster("spar");
});
afterAll(() => cluster?.stop());

function agent(url: string): Promise<Daemon> {
  return startReplica(scope, url);
}

async function userMessages(url: string, id: string): Promise<string[]> {
  return (await storedRows(url, id))
    .map((row) => row.event as SessionEvent)
    .flatMap((event) => (event.kind === "user-message" ? [event.text] : []));
}

test("a command left for a frozen holder by a receiver that died runs on the daemon that takes the session for its own request, before that request", async () => {
  const url = cluster.createDatabase("replicas_orphan_command");
  const holder = await agent(url);
  const receiver = await agent(url);
  const taker = await agent(url);
  expect((await postJson(`${holder.baseUrl}/sessions`, { sessionID: "work" })).status).toBe(201);
  const sql = new SQL(url, { max: 1 });
  scope.defer(sql, (connection) => connection.close());

  // The holder stops answering: its connections stay open, so its lease runs to its expiry.
  process.kill(holder.process.pid, "SIGSTOP");
  scope.defer(holder, (daemon) => process.kill(daemon.process.pid, "SIGCONT"));
  // The receiver commits the first message as a command for the holder, and dies waiting.
  const waiting = postJson(`${receiver.baseUrl}/sessions/work/inject`, { message: "first" }).catch(() => undefined);
  await waitFor(
    async () => ((await sql`SELECT 1 FROM spar_session_commands WHERE op = 'inject'`).length > 0 ? true : undefined),
    10_000,
    "the first message committed as a command",
  );
  await receiver.kill9();
  await waiting;
  // At the lease's expiry the second message, sent to the third daemon, takes the session there.
  await waitFor(
    async () =>
      (
        await sql`SELECT 1 FROM spar_session_leases l JOIN spar_sessions s ON s.pk = l.session_pk
          WHERE s.sid = 'work' AND l.expires_at <= clock_timestamp()`
      ).length > 0
        ? true
        : undefined,
    10_000,
    "the holder's lease expired",
  );
  expect((await postJson(`${taker.baseUrl}/sessions/work/inject`, { message: "second" })).status).toBe(200);

  await waitFor(
    async () => ((await userMessages(url, "work")).length >= 2 ? true : undefined),
    10_000,
    "both messages in the log",
  );
  expect(await userMessages(url, "work")).toEqual(["first", "second"]);
  const unanswered = await sql`SELECT id FROM spar_session_commands WHERE result IS NULL`;
  expect(unanswered).toHaveLength(0);
}, 60_000);
