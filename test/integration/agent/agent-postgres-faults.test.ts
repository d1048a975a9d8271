/**
 * `spar agent` on a real PostgreSQL 15 through the faults of issue 34 item 4, one daemon per
 * database (D500-D503): the server stopped for 10 s and started again under a steady stream of
 * injects to several sessions (the daemon reconnects by itself; every inject answered 200 is in
 * the log once, the refused ones answered a JSON 503 and are nowhere, each session's seqs are
 * contiguous; /healthz reports the store while it is down and recovers); the server stopped while
 * an inject's COMMIT is written but not yet answered (held by a synchronous standby that never
 * comes): the inject is answered 200 once the server is back, not a 503 for a committed message
 * (D501); the database switched to
 * read-only behind the daemon (a JSON 503 naming it, reads still served, writes again once it is
 * switched back); and the server out of disk space (a real SQLSTATE 53100 raised by a trigger:
 * a JSON 503 naming it, a turn that could not commit half-writes nothing and runs once after).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL } from "bun";
import type { SessionEvent } from "../../../src/core/events.ts";
import { PostgresStore } from "../../../src/store/postgres/postgres-store.ts";
import { injectAndWait } from "../../support/agent-durability.ts";
import { type Tally, injectClient } from "../../support/inject-tally.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { type Daemon, postJson, waitFor } from "../../support/daemon.ts";
import { type PostgresCluster, startPostgresCluster } from "../../support/postgres-cluster.ts";

const scope = daemonScope();
let cluster: PostgresCluster;
let admin: SQL;

beforeAll(() => {
  cluster = startPostgresCluster("spar");
  admin = new SQL(cluster.url, { max: 2 });
});
afterAll(async () => {
  await admin?.close().catch(() => {});
  cluster?.stop();
});

/** A fresh database of the cluster, as the agent's store flags. */
function postgresStore(database: string, ...extra: string[]): { sessionDb: string; args: string[] } {
  return { sessionDb: cluster.createDatabase(database), args: ["--session-db-driver=postgres", ...extra] };
}

/** A session's stored rows: seqs, and the text of its user messages (a reader beside the daemon, no writer lock). */
async function stored(url: string, id: string): Promise<{ seqs: number[]; userText: string[] }> {
  const store = await PostgresStore.open(url, { writerLock: false });
  try {
    const rows = await store.read({ app: "spar", id }, 0, 100_000);
    const userText = rows
      .map((row) => row.event as SessionEvent)
      .flatMap((event) => (event.kind === "user-message" ? [event.text] : []));
    return { seqs: rows.map((row) => row.seq), userText };
  } finally {
    await store.close();
  }
}

/** How often each marker (`<...>`) occurs in the texts. */
function markerCounts(texts: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const text of texts)
    for (const [marker] of text.matchAll(/<[^>]+>/g)) counts.set(marker, (counts.get(marker) ?? 0) + 1);
  return counts;
}

async function health(daemon: Daemon): Promise<{ status: number; sessionDb?: string }> {
  const response = await fetch(`${daemon.baseUrl}/healthz`);
  const body = (await response.json()) as { checks?: Record<string, string> };
  return { status: response.status, ...(body.checks?.session_db ? { sessionDb: body.checks.session_db } : {}) };
}

test("PostgreSQL stopped for 10 s under load: the daemon reconnects, nothing accepted is lost or doubled, refusals are JSON 503s", async () => {
  const store = postgresStore("agent_restart", "--multi-session");
  const daemon = await scope.start(store);
  const sessions = ["s1", "s2", "s3", "s4"];
  for (const id of sessions) expect((await postJson(`${daemon.baseUrl}/sessions`, { sessionID: id })).status).toBe(201);
  const tallies = new Map(sessions.map((id): [string, Tally] => [id, { accepted: [], refused: [], wrong: [] }]));
  let stopping = false;
  const clients = sessions.map((id) => injectClient([daemon], id, () => stopping, tallies.get(id) as Tally));
  const acceptedAll = (atLeast: (id: string) => number) => () =>
    sessions.every((id) => (tallies.get(id)?.accepted.length ?? 0) >= atLeast(id)) ? true : undefined;
  await waitFor(
    acceptedAll(() => 3),
    20_000,
    "injects accepted before the outage",
  );
  expect((await health(daemon)).status).toBe(200);

  cluster.pause();
  const stoppedAt = Date.now();
  try {
    const down = await waitFor(
      async () => {
        const now = await health(daemon);
        return now.status === 503 ? now : undefined;
      },
      8000,
      "/healthz to report the store down",
    );
    expect(down.sessionDb).not.toBe("ready");
    // Time under test: the outage itself, the server stopped for 10 s while the clients keep injecting.
    await Bun.sleep(Math.max(0, 10_000 - (Date.now() - stoppedAt)));
  } finally {
    cluster.resume();
  }
  await waitFor(async () => ((await health(daemon)).status === 200 ? true : undefined), 15_000, "/healthz to recover");
  const atResume = new Map(sessions.map((id) => [id, tallies.get(id)?.accepted.length ?? 0]));
  await waitFor(
    acceptedAll((id) => (atResume.get(id) ?? 0) + 3),
    20_000,
    "injects accepted after the outage",
  );
  stopping = true;
  await Promise.all(clients);

  for (const id of sessions) {
    const tally = tallies.get(id) as Tally;
    expect(tally.wrong).toEqual([]);
    // Every accepted inject reaches the log once its turn runs (later turns drain what waited).
    const rows = await waitFor(
      async () => {
        const now = await stored(store.sessionDb, id);
        const counts = markerCounts(now.userText);
        return tally.accepted.every((marker) => counts.has(marker)) ? now : undefined;
      },
      30_000,
      `session ${id}'s accepted injects in the log`,
    );
    expect(rows.seqs).toEqual(Array.from({ length: rows.seqs.length }, (_, i) => i + 1));
    const counts = markerCounts(rows.userText);
    for (const marker of tally.accepted) expect(`${marker} x${counts.get(marker)}`).toBe(`${marker} x1`);
    for (const marker of tally.refused) expect(counts.has(marker)).toBe(false);
  }
  const refusedTotal = sessions.reduce((sum, id) => sum + (tallies.get(id)?.refused.length ?? 0), 0);
  expect(refusedTotal).toBeGreaterThan(0);
  expect(daemon.log()).toContain("readiness check session_db: ready -> failed");
  expect(daemon.log()).toContain("readiness check session_db: failed -> ready");
}, 120_000);

/** Every COMMIT on the cluster waits for a synchronous standby that never comes (written, not yet answered), or not. */
async function holdCommits(on: boolean): Promise<void> {
  if (on) await admin`ALTER SYSTEM SET synchronous_standby_names = 'never_connects'`;
  else await admin`ALTER SYSTEM RESET synchronous_standby_names`;
  await admin`SELECT pg_reload_conf()`;
}

test("the server stopped while an inject's COMMIT is on its way: the inject is answered 200 once it is back, its message in the log once (D501)", async () => {
  const store = postgresStore("agent_in_doubt");
  const daemon = await scope.start(store);
  await injectAndWait(daemon, "<before>", 1);
  await holdCommits(true);
  let held: Promise<Response> | undefined;
  try {
    held = postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "<held>" });
    // The inject's transaction has written its commit record and waits: stop the server now.
    await waitFor(
      async () =>
        (await admin`SELECT 1 FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND datname = 'agent_in_doubt'`)
          .length > 0
          ? true
          : undefined,
      5000,
      "the inject's COMMIT waiting",
    );
    cluster.pause();
    try {
      // Writes behind the commit in doubt are refused at once while the server is down.
      const refused = await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "<refused>" });
      expect(refused.status).toBe(503);
      expect(((await refused.json()) as { error: string }).error).toContain("session store refused the write");
    } finally {
      cluster.resume();
    }
  } finally {
    await holdCommits(false);
  }
  const answer = await held;
  expect(answer.status).toBe(200);
  await waitFor(
    async () => (markerCounts((await stored(store.sessionDb, "default")).userText).has("<held>") ? true : undefined),
    15_000,
    "the held inject's turn",
  );
  await injectAndWait(daemon, "<after>", 3);
  const rows = await stored(store.sessionDb, "default");
  expect(rows.seqs).toEqual(Array.from({ length: rows.seqs.length }, (_, i) => i + 1));
  expect(Object.fromEntries(markerCounts(rows.userText))).toEqual({ "<before>": 1, "<held>": 1, "<after>": 1 });
}, 60_000);

test("a database switched to read-only behind the daemon: a JSON 503 naming it, reads still served, writes again once switched back", async () => {
  const store = postgresStore("agent_read_only");
  const daemon = await scope.start(store);
  await injectAndWait(daemon, "<before>", 1);
  await admin.unsafe("ALTER DATABASE agent_read_only SET default_transaction_read_only = on");
  // As a failover to a read-only server does: the daemon's connections end and come back read-only.
  await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'agent_read_only'`;
  try {
    const refused = await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "<while-read-only>" });
    expect(refused.status).toBe(503);
    const body = (await refused.json()) as { error: string; sqlstate?: string };
    expect(body.error).toContain("session store refused the write: the database is read-only");
    expect(body.sqlstate).toBe("25006");
    // Reads keep being served: the log and the readiness probe (a read) are fine.
    const events = await fetch(`${daemon.baseUrl}/sessions/default/usage`);
    expect(events.status).toBe(200);
    expect((await health(daemon)).status).toBe(200);
  } finally {
    await admin.unsafe("ALTER DATABASE agent_read_only RESET default_transaction_read_only");
  }
  // The refused write closed the writer's connection: the next one is read-write again (D502).
  await injectAndWait(daemon, "<after>", 2);
  const rows = await stored(store.sessionDb, "default");
  expect(rows.seqs).toEqual([1, 2, 3, 4]);
  expect([...markerCounts(rows.userText).keys()]).toEqual(["<before>", "<after>"]);
}, 60_000);

test("the server out of disk space (SQLSTATE 53100): a JSON 503 naming it; a turn that could not commit writes nothing and runs once after", async () => {
  const store = postgresStore("agent_disk_full");
  const daemon = await scope.start(store);
  await injectAndWait(daemon, "<before>", 1);
  const db = new SQL(store.sessionDb, { max: 1 });
  // A real server error path: the trigger raises disk_full (53100) on the tables the flag names.
  await db.unsafe(`CREATE TABLE spar_test_disk (full_on text NOT NULL);
    INSERT INTO spar_test_disk VALUES ('');
    CREATE FUNCTION spar_test_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF (SELECT position(TG_TABLE_NAME IN full_on) > 0 FROM spar_test_disk) THEN
          RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full';
        END IF;
        RETURN NEW;
      END $$;
    CREATE TRIGGER disk_full BEFORE INSERT ON spar_events FOR EACH ROW EXECUTE FUNCTION spar_test_disk_full();
    CREATE TRIGGER disk_full BEFORE INSERT ON spar_inbox FOR EACH ROW EXECUTE FUNCTION spar_test_disk_full();`);
  const fill = (tables: string) => db`UPDATE spar_test_disk SET full_on = ${tables}`;
  try {
    await fill("spar_events spar_inbox");
    const refused = await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "<refused>" });
    expect(refused.status).toBe(503);
    const body = (await refused.json()) as { error: string; sqlstate?: string };
    expect(body.error).toContain("session store refused the write: the database server is out of disk space");
    expect(body.sqlstate).toBe("53100");
    expect((await fetch(`${daemon.baseUrl}/sessions/default/usage`)).status).toBe(200);

    // The inbox has room, the log has not: the inject is accepted, its turn cannot commit a row.
    await fill("spar_events");
    const queued = await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "<queued>" });
    expect(queued.status).toBe(200);
    await waitFor(
      async () =>
        (await db`SELECT count(*)::int AS n FROM spar_inbox WHERE NOT drained`)[0].n === 1 ? true : undefined,
      5000,
      "the accepted inject waiting in the inbox",
    );
  } finally {
    await fill("");
  }
  await injectAndWait(daemon, "<after>", 2);
  const rows = await waitFor(
    async () => {
      const now = await stored(store.sessionDb, "default");
      return markerCounts(now.userText).has("<after>") ? now : undefined;
    },
    10_000,
    "the turn after recovery",
  );
  await db.close();
  expect(rows.seqs).toEqual(Array.from({ length: rows.seqs.length }, (_, i) => i + 1));
  const counts = markerCounts(rows.userText);
  expect(counts.get("<before>")).toBe(1);
  expect(counts.get("<queued>")).toBe(1);
  expect(counts.get("<after>")).toBe(1);
  expect(counts.has("<refused>")).toBe(false);
}, 60_000);
