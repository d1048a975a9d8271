/**
 * `spar agent --session-db-driver=postgres` (issue 34, first slice; D483-D486) on a real PostgreSQL
 * 15 cluster that requires a password, one database per test: a turn's rows are committed and replayed from `since=0` after a
 * restart; the kill -9 scenarios sqlite runs (test/support/agent-durability.ts) lose and repeat no
 * committed row here too, a deleted session's tombstone outlives a restart, and auto-continue's re-drive of a turn cut by kill -9 runs once; a URL that is not postgres:// is a usage error; the URL's password never
 * reaches the log or an answer (in the URL's userinfo or its query; PGPASSWORD works too); while the server is down an inject answers 503 and /healthz says
 * so, and turns run again once it is back; an unreachable database fails the startup. Several daemons on one
 * database: agent-replicas.test.ts.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { CommittedRow } from "../../../src/core/events.ts";
import { PostgresStore } from "../../../src/store/postgres/postgres-store.ts";
import {
  type AgentStore,
  agentSeqs,
  injectAndWait,
  killNineDuringDelivery,
  killNineMidTurnWithInbox,
} from "../../support/agent-durability.ts";
import { autoContinueHarness, killAtToolCallRedrivesOnce } from "../../support/auto-continue-harness.ts";
import { daemonScope, runToExit } from "../../support/daemon-scope.ts";
import { postJson, sparCommand } from "../../support/daemon.ts";
import { type PostgresCluster, startPostgresCluster } from "../../support/postgres-cluster.ts";
import { collect } from "../../support/sse-client.ts";

const scope = daemonScope();
let cluster: PostgresCluster;

/** The cluster's password (scram-sha-256: every login gives it); it must never be logged. */
const PASSWORD = "pg-s3cret-word";

beforeAll(() => {
  cluster = startPostgresCluster("spar", { password: PASSWORD });
});
afterAll(() => cluster?.stop());

/** A fresh database of the cluster, as the agent's store flags, its URL carrying PASSWORD. */
function postgresStore(database: string): AgentStore & { sessionDb: string; args: string[] } {
  cluster.createDatabase(database);
  return {
    sessionDb: `postgres://postgres:${PASSWORD}@127.0.0.1:${cluster.port}/${database}`,
    args: ["--session-db-driver=postgres"],
  };
}

async function storedRows(url: string, id: string): Promise<CommittedRow[]> {
  // A reader beside the daemon: it takes no writer lock.
  const store = await PostgresStore.open(url, { writerLock: false });
  try {
    return await store.read({ app: "spar", id }, 0, 10_000);
  } finally {
    await store.close();
  }
}

test("echo turns commit their rows in postgres; after a restart since=0 replays them; the password is never logged", async () => {
  const store = postgresStore("agent_turns");
  const first = await scope.start(store);
  expect(first.log()).toContain(`store postgres postgres://***@127.0.0.1:${cluster.port}/agent_turns`);
  await injectAndWait(first, "one", 1);
  await injectAndWait(first, "two", 2);
  expect((await storedRows(store.sessionDb, "default")).map((row) => row.seq)).toEqual([1, 2, 3, 4]);
  expect(await first.sigterm()).toBe(0);

  const second = await scope.start(store);
  const replay = collect(`${second.baseUrl}/sessions/default/events?since=0`);
  await replay.waitFor((frame) => frame.event === "agent" && (frame.data as { seq: number }).seq === 4);
  await injectAndWait(second, "three", 3);
  await replay.waitFor((frame) => frame.event === "agent" && (frame.data as { seq: number }).seq === 6);
  replay.close();
  expect(agentSeqs(replay.frames)).toEqual([1, 2, 3, 4, 5, 6]);
  for (const daemon of [first, second]) expect(daemon.log()).not.toContain(PASSWORD);
}, 60_000);

test("postgres: kill -9 during delivery, the client's Last-Event-ID reconnect to the restarted daemon loses and repeats nothing", async () => {
  await killNineDuringDelivery(scope, postgresStore("agent_delivery"));
}, 60_000);

test("postgres: kill -9 mid-turn with a message waiting, history, owner and inbox survive and the message is drained once", async () => {
  await killNineMidTurnWithInbox(scope, postgresStore("agent_midturn"));
}, 60_000);

test("postgres: kill -9 between a tool call and its result, the restart repairs the call and re-drives the turn once", async () => {
  // Auto-continue's boot records and interruption claims live in the postgres store here.
  await killAtToolCallRedrivesOnce(autoContinueHarness(scope, postgresStore("agent_redrive")));
}, 60_000);

test("multi-session on postgres: a deleted session's tombstone outlives a restart; /sessions lists what the database holds", async () => {
  const store = postgresStore("agent_sessions");
  const args = [...(store.args ?? []), "--multi-session"];
  const remove = (daemon: { baseUrl: string }) =>
    fetch(`${daemon.baseUrl}/sessions/doomed`, { method: "DELETE", headers: { "content-type": "application/json" } });
  const first = await scope.start({ ...store, args });
  for (const id of ["kept", "doomed"])
    expect((await postJson(`${first.baseUrl}/sessions`, { sessionID: id })).status).toBe(201);
  expect((await postJson(`${first.baseUrl}/sessions/doomed/inject`, { message: "hi" })).status).toBe(200);
  expect((await remove(first)).status).toBe(204);
  expect(await first.sigterm()).toBe(0);

  const second = await scope.start({ ...store, args });
  const listed = (await (await fetch(`${second.baseUrl}/sessions`)).json()) as { sessions: { sessionID: string }[] };
  expect(listed.sessions.map((row) => row.sessionID).sort()).toEqual(["default", "kept"]);
  const again = await remove(second);
  expect(((await again.json()) as { error: string }).error).toContain("already deleted");
  expect((await fetch(`${second.baseUrl}/sessions/doomed/status`)).status).toBe(404);
}, 60_000);

test("the password may stay out of the URL (PGPASSWORD) or sit in its query (password=, logged as ***)", async () => {
  const { args } = postgresStore("agent_credentials");
  const bare = `postgres://postgres@127.0.0.1:${cluster.port}/agent_credentials`;
  const fromEnv = await scope.start({ sessionDb: bare, args, env: { PGPASSWORD: PASSWORD } });
  // The userinfo goes as a whole, the user name with it.
  const shown = `postgres://***@127.0.0.1:${cluster.port}/agent_credentials`;
  expect(fromEnv.log()).toContain(`store postgres ${shown},`);
  await injectAndWait(fromEnv, "one", 1);
  expect(await fromEnv.sigterm()).toBe(0);

  const inQuery = await scope.start({
    sessionDb: `${bare}?password=${PASSWORD}`,
    args,
    env: { PGPASSWORD: undefined },
  });
  expect(inQuery.log()).toContain(`store postgres ${shown}?password=***,`);
  await injectAndWait(inQuery, "two", 2);
  expect(inQuery.log()).not.toContain(PASSWORD);
}, 60_000);

test("while the server is down an inject answers 503 with a JSON error and /healthz reports the store; once it is back turns run again", async () => {
  const store = postgresStore("agent_outage");
  const daemon = await scope.start(store);
  await injectAndWait(daemon, "before", 1);
  cluster.pause();
  try {
    const refused = await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "while down" });
    expect(refused.status).toBe(503);
    const body = (await refused.json()) as { error: string };
    expect(body.error).toContain("session store");
    expect(body.error).not.toContain(PASSWORD);
    const ready = await fetch(`${daemon.baseUrl}/healthz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { checks: Record<string, string> }).checks.session_db).not.toBe("ready");
  } finally {
    cluster.resume();
  }
  await injectAndWait(daemon, "after", 2);
  expect((await storedRows(store.sessionDb, "default")).map((row) => row.seq)).toEqual([1, 2, 3, 4]);
  expect(daemon.log()).not.toContain(PASSWORD);
}, 60_000);

test("a --session-db that is not a postgres:// URL under the postgres driver is a usage error (exit 2) naming the flag", async () => {
  const result = await runToExit(
    sparCommand(
      "agent",
      "--attach-listen=127.0.0.1:0",
      "--session-db-driver=postgres",
      "--session-db=/tmp/sessions.db",
    ),
  );
  expect(result.code).toBe(2);
  expect(result.stderr).toContain("--session-db under --session-db-driver=postgres must be a postgres:// URL");
  expect(result.stderr).not.toContain("    at ");
});

test("an unreachable postgres store fails the startup (exit 1) with the URL's password redacted", async () => {
  const result = await runToExit(
    sparCommand(
      "agent",
      "--attach-listen=127.0.0.1:0",
      "--session-db-driver=postgres",
      `--session-db=postgres://agent:${PASSWORD}@127.0.0.1:1/agent`,
    ),
    { timeoutMs: 15_000 },
  );
  expect(result.code).toBe(1);
  expect(result.stderr).toContain("cannot open session store postgres://***@127.0.0.1:1/agent");
  expect(result.stderr).not.toContain(PASSWORD);
});
