/**
 * A commit in doubt on a real PostgreSQL 15 (D501): the connection fails while COMMIT is on its
 * way, and the store asks the server what became of the transaction before it answers. Each case
 * is forced with a real server path through the store's beforeCommit failpoint: a COMMIT that
 * the server writes and then holds (synchronous replication to a standby that never comes) and
 * whose backend is then ended, so it committed; a COMMIT held in a deferred trigger before the
 * commit record and ended there, so it aborted; and a server stopped while the commit is held.
 * Each time: exactly the rows the caller was told of, in the log once.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL, type TransactionSQL } from "bun";
import type { SparError } from "../../../src/core/errors.ts";
import { PostgresStore } from "../../../src/store/postgres/postgres-store.ts";
import { type PostgresCluster, startPostgresCluster } from "../../support/postgres-cluster.ts";
import { audit, key, record, rejection } from "./sqlite-helpers.ts";

let cluster: PostgresCluster;
let admin: SQL;
let databases = 0;

beforeAll(async () => {
  cluster = startPostgresCluster("in_doubt");
  admin = new SQL(cluster.url, { max: 2 });
  // A synchronous standby that never connects: a transaction that asks for synchronous commit
  // writes its commit record, then waits (wait_event SyncRep). Everything else commits locally.
  await admin`ALTER SYSTEM SET synchronous_standby_names = 'never_connects'`;
  await admin`ALTER SYSTEM SET synchronous_commit = 'local'`;
  await admin`SELECT pg_reload_conf()`;
});
afterAll(async () => {
  await admin?.close();
  cluster?.stop();
});

/** A store on a fresh database whose next transaction runs `arm` just before COMMIT (once). */
async function armedStore(waitMs?: number): Promise<{
  store: PostgresStore;
  url: string;
  arm: (step: (tx: TransactionSQL) => Promise<unknown>) => void;
}> {
  const url = cluster.createDatabase(`doubt_${++databases}`);
  let armed: ((tx: TransactionSQL) => Promise<unknown>) | undefined;
  const store = await PostgresStore.open(url, {
    ...(waitMs === undefined ? {} : { inDoubtWaitMs: waitMs }),
    beforeCommit: async (tx) => {
      const step = armed;
      armed = undefined;
      await step?.(tx);
    },
  });
  await store.createSession(record("s"));
  return { store, url, arm: (step) => (armed = step) };
}

/** The backend waiting on `waitEvent` (polling pg_stat_activity until one does). */
async function waitingBackend(waitEvent: string): Promise<number> {
  for (;;) {
    const rows: { pid: number }[] = await admin`SELECT pid FROM pg_stat_activity WHERE wait_event = ${waitEvent}`;
    if (rows[0] !== undefined) return rows[0].pid;
    // Poll: the backend reaches its wait a moment after the store sent COMMIT.
    await Bun.sleep(10);
  }
}

async function terminate(pid: number): Promise<void> {
  await admin`SELECT pg_terminate_backend(${pid})`;
}

/** The audit labels stored for session s, in seq order, read by a connection of its own. */
async function storedLabels(url: string): Promise<string[]> {
  const reader = new SQL(url, { max: 1 });
  try {
    const rows: { body: string }[] = await reader`SELECT e.body FROM spar_events e ORDER BY e.seq`;
    return rows.map((row) => (JSON.parse(row.body) as { metadata: { label: string } }).metadata.label);
  } finally {
    await reader.close();
  }
}

test("a COMMIT the server wrote whose connection then died answers its rows: committed once, never retried", async () => {
  const { store, url, arm } = await armedStore();
  arm((tx) => tx`SET LOCAL synchronous_commit = on`);
  const appended = store.append(key("s"), [audit("held")]);
  await terminate(await waitingBackend("SyncRep"));
  expect((await appended).map((row) => row.seq)).toEqual([1]);
  expect(store.stats.inDoubt).toBe(1);
  expect((await store.append(key("s"), [audit("next")])).map((row) => row.seq)).toEqual([2]);
  expect(await storedLabels(url)).toEqual(["held", "next"]);
  await store.close();
});

test("a COMMIT ended before its commit record was written is found aborted and runs once more: one row", async () => {
  const { store, url, arm } = await armedStore();
  // A deferred trigger runs at COMMIT, before the commit record; it sleeps when the transaction asks.
  const db = new SQL(url, { max: 1 });
  await db.unsafe(`CREATE FUNCTION hold_commit() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF current_setting('spar_test.hold', true) = 'on' THEN PERFORM pg_sleep(60); END IF; RETURN NULL; END $$;
    CREATE CONSTRAINT TRIGGER hold_commit AFTER INSERT ON spar_events DEFERRABLE INITIALLY DEFERRED
      FOR EACH ROW EXECUTE FUNCTION hold_commit();`);
  await db.close();
  arm((tx) => tx`SET LOCAL spar_test.hold = 'on'`);
  const appended = store.append(key("s"), [audit("retried")]);
  await terminate(await waitingBackend("PgSleep"));
  expect((await appended).map((row) => row.seq)).toEqual([1]);
  expect(store.stats.inDoubt).toBe(1);
  expect(store.stats.retries).toBeGreaterThanOrEqual(1);
  expect(await storedLabels(url)).toEqual(["retried"]);
  await store.close();
});

test("the server stopped while a COMMIT is held: writes queued meanwhile are refused unattempted; once it is back the held one answers committed", async () => {
  const { store, url, arm } = await armedStore();
  arm((tx) => tx`SET LOCAL synchronous_commit = on`);
  const appended = store.append(key("s"), [audit("held")]);
  await waitingBackend("SyncRep");
  cluster.pause();
  try {
    // Queued behind the commit in doubt while the server is down: refused, never written.
    const refused = await rejection(store.append(key("s"), [audit("refused")]));
    expect(refused.code).toBe("unavailable");
    expect(refused.message).toContain("session store refused the write");
  } finally {
    cluster.resume();
  }
  expect((await appended).map((row) => row.seq)).toEqual([1]);
  expect((await store.append(key("s"), [audit("after")])).map((row) => row.seq)).toEqual([2]);
  expect(await storedLabels(url)).toEqual(["held", "after"]);
  await store.close();
}, 30_000);

test("a server that does not answer within the bound: the caller is told the write may have been applied, and it was", async () => {
  const { store, url, arm } = await armedStore(300);
  arm((tx) => tx`SET LOCAL synchronous_commit = on`);
  const appended = store.append(key("s"), [audit("held")]).then(
    () => undefined,
    (failure: unknown) => failure as SparError,
  );
  await waitingBackend("SyncRep");
  cluster.pause();
  let error: SparError | undefined;
  try {
    error = await appended;
  } finally {
    cluster.resume();
  }
  expect(error?.code).toBe("unavailable");
  expect(error?.message).toContain("commit in doubt");
  expect(error?.message).toContain("may have been applied");
  expect(error?.details.in_doubt).toBe(true);
  // It was: the server wrote the commit record before it stopped.
  expect(await storedLabels(url)).toEqual(["held"]);
  expect(await store.head(key("s"))).toBe(1);
  await store.close();
}, 30_000);
