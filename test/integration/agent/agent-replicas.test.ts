/**
 * Several `spar agent` daemons on one PostgreSQL database (issue 34; D487-D490), real processes
 * on a real PostgreSQL 15: three daemons serve nine sessions with the injects spread across them
 * (most reach a daemon that does not serve the session and are relayed to the one that does) and a
 * subscriber on every daemon for every session: each subscriber gets every row of its session once
 * and in seq order, the rows the database holds; every daemon lists the same sessions. A daemon
 * killed -9 mid-turn: another takes its session over and continues the cut turn once, and a
 * subscriber on a third daemon sees it. A second daemon no longer refuses to start (D486 is
 * superseded); an operation only the serving daemon can answer gets 409 naming it elsewhere.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { agentSeqs } from "../../support/agent-durability.ts";
import { type Row, rows, slow, say } from "../../support/auto-continue-harness.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { type Daemon, postJson, waitFor } from "../../support/daemon.ts";
import { type PostgresCluster, startPostgresCluster } from "../../support/postgres-cluster.ts";
import { startReplica, storedRows } from "../../support/agent-replicas.ts";
import { type Collector, collect } from "../../support/sse-client.ts";

const scope = daemonScope();
let cluster: PostgresCluster;

beforeAll(() => {
  cluster = startPostgresCluster("spar");
});
afterAll(() => cluster?.stop());

function database(name: string): string {
  return cluster.createDatabase(name);
}

/** Start `n` agents on the one database (`script`: each one's scripted model; absent, echo). */
async function replicas(url: string, n: number, script?: (index: number) => unknown[]): Promise<Daemon[]> {
  const daemons: Daemon[] = [];
  // One after another: the first creates the schema and the bootstrap session.
  for (let index = 0; index < n; index++)
    daemons.push(await startReplica(scope, url, script === undefined ? {} : { script: script(index) }));
  return daemons;
}

function follow(daemon: Daemon, id: string): Collector {
  return scope.defer(collect(`${daemon.baseUrl}/sessions/${id}/events`), (stream) => stream.close());
}

/** No message of the session waits in its inbox. */
async function drained(url: string, id: string): Promise<boolean> {
  const sql = new SQL(url);
  try {
    const waiting: { n: number }[] = await sql`SELECT count(*)::int AS n FROM spar_inbox i
      JOIN spar_sessions s ON s.pk = i.session_pk WHERE s.sid = ${id} AND NOT i.drained`;
    return waiting[0]?.n === 0;
  } finally {
    await sql.close();
  }
}

test("three daemons, nine sessions, injects on every daemon: each subscriber on each daemon gets every row once and in order", async () => {
  const url = database("replicas_spread");
  const daemons = await replicas(url, 3);
  const ids = Array.from({ length: 9 }, (_, index) => `s${index}`);
  // Each session is created on (and so served by) daemon index % 3.
  for (const [index, id] of ids.entries())
    expect((await postJson(`${daemons[index % 3]?.baseUrl}/sessions`, { sessionID: id })).status).toBe(201);
  const streams = ids.flatMap((id) => daemons.map((daemon) => ({ id, stream: follow(daemon, id) })));
  await Promise.all(streams.map(({ stream }) => stream.waitFor((frame) => frame.event === "capabilities")));

  // Four messages per session, each sent to a different daemon than the last: most are relayed.
  const injects = ids.flatMap((id, index) =>
    [0, 1, 2, 3].map(async (turn) => {
      const daemon = daemons[(index + turn) % 3] as Daemon;
      const response = await postJson(`${daemon.baseUrl}/sessions/${id}/inject`, { message: `${id} message ${turn}` });
      expect(response.status).toBe(200);
      expect(((await response.json()) as { woke?: boolean }).woke).toBe(true);
    }),
  );
  await Promise.all(injects);
  // Every message drained into a turn and every turn answered (messages that waited behind a turn
  // are drained together by the next one).
  await waitFor(
    async () => {
      for (const id of ids) {
        const stored = await storedRows(url, id);
        const users = stored.filter((row) => (row.event as { author?: string }).author === "user").length;
        if (users < 1 || (stored.at(-1)?.event as { author?: string }).author !== "spar") return undefined;
        if (!(await drained(url, id))) return undefined;
      }
      return true;
    },
    20_000,
    "every message answered",
  );

  for (const id of ids) {
    const stored = (await storedRows(url, id)).map((row) => row.seq);
    expect(stored).toEqual(Array.from({ length: stored.length }, (_, index) => index + 1));
    for (const { stream } of streams.filter((entry) => entry.id === id)) {
      await waitFor(() => (agentSeqs(stream.frames).at(-1) === stored.length ? true : undefined), 10_000, "the head");
      expect(agentSeqs(stream.frames)).toEqual(stored);
    }
  }

  // One daemon served each session: its lease names the daemon that created it.
  const sql = new SQL(url);
  try {
    const holders: { sid: string; holder: string }[] = await sql`SELECT s.sid, l.holder FROM spar_session_leases l
      JOIN spar_sessions s ON s.pk = l.session_pk WHERE s.sid LIKE 's%'`;
    expect(holders).toHaveLength(9);
    const byDaemon = new Map<string, string[]>();
    for (const { sid, holder } of holders) byDaemon.set(holder, [...(byDaemon.get(holder) ?? []), sid]);
    expect([...byDaemon.values()].map((sids) => sids.sort())).toEqual(
      expect.arrayContaining([
        ["s0", "s3", "s6"],
        ["s1", "s4", "s7"],
        ["s2", "s5", "s8"],
      ]),
    );
  } finally {
    await sql.close();
  }

  const listings = await Promise.all(
    daemons.map(async (daemon) => {
      const listed = (await (await fetch(`${daemon.baseUrl}/sessions`)).json()) as {
        sessions: { sessionID: string }[];
      };
      return listed.sessions.map((row) => row.sessionID).sort();
    }),
  );
  expect(listings[0]).toEqual(["default", ...ids]);
  expect(listings[1]).toEqual(listings[0]);
  expect(listings[2]).toEqual(listings[0]);

  // A dashboard's reads are answered by the serving daemon whichever daemon they reach (D489).
  const usages = await Promise.all(
    daemons.map(async (daemon) => (await (await fetch(`${daemon.baseUrl}/sessions/s0/usage`)).json()) as unknown),
  );
  expect((usages[0] as { overall: { turns: number } }).overall.turns).toBeGreaterThanOrEqual(1);
  expect(usages[1]).toEqual(usages[0]);
  expect(usages[2]).toEqual(usages[0]);
  const status = await fetch(`${daemons[2]?.baseUrl}/sessions/s0/status`);
  expect(((await status.json()) as { state: string }).state).toBe("idle");
  // What is not relayed names the session's daemon (409) on the others.
  const subagents = await fetch(`${daemons[1]?.baseUrl}/sessions/s0/subagents`);
  expect(subagents.status).toBe(409);
  expect(((await subagents.json()) as { error: string }).error).toContain("served by another spar daemon");
  expect((await fetch(`${daemons[0]?.baseUrl}/sessions/s0/subagents`)).status).toBe(200);
}, 90_000);

test("kill -9 of the daemon serving a session mid-turn: another takes it over and continues the turn once; a subscriber on a third daemon sees it", async () => {
  const url = database("replicas_takeover");
  // The first daemon's answer never comes (it dies first); the others answer the re-driven turn.
  const daemons = await replicas(url, 3, (index) =>
    index === 0 ? [slow("never delivered", 30_000)] : [say("continued elsewhere")],
  );
  const [owner, other, watcher] = daemons as [Daemon, Daemon, Daemon];
  expect((await postJson(`${owner.baseUrl}/sessions`, { sessionID: "work" })).status).toBe(201);
  const stream = follow(watcher, "work");
  await stream.waitFor((frame) => frame.event === "capabilities");
  // Sent to a daemon that does not serve the session: relayed to the owner, whose turn starts.
  expect((await postJson(`${other.baseUrl}/sessions/work/inject`, { message: "do the work" })).status).toBe(200);
  await stream.waitFor((frame) => frame.event === "agent" && (frame.data.event as Row).Author === "user");
  await owner.kill9();

  await waitFor(
    () => (rows(stream).some((row) => row.Content?.parts[0]?.text === "continued elsewhere") ? true : undefined),
    20_000,
    "the continued turn on the watcher's stream",
  );
  const authors = rows(stream).map((row) => row.Author);
  expect(authors.filter((author) => author === "agent/auto-continue")).toHaveLength(1);
  expect(authors.filter((author) => author === "user")).toHaveLength(1);
  const stored = (await storedRows(url, "work")).map((row) => row.seq);
  expect(agentSeqs(stream.frames)).toEqual(stored);
  const takers = [other, watcher].filter((daemon) => daemon.log().includes("session spar/work: taken over"));
  expect(takers).toHaveLength(1);
}, 90_000);
