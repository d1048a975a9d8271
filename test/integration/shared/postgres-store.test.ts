/**
 * The Store contract (test/unit/store/store-contract.ts) on PostgresStore and its PostgresReader against a real
 * PostgreSQL 15 cluster started for this file (each location a fresh database), and what only the
 * postgres store promises: one daemon's store per database (the writer lock), two stores sharing
 * a database on purpose keep seqs contiguous per session, the schema is migrated once and reopened, a server outage fails calls with
 * `unavailable` and the store works again once the server is back, and a bad or unreachable URL
 * fails the open with a clear error within the connect timeout.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { PostgresReader } from "../../../src/store/postgres/postgres-reader.ts";
import { PostgresStore } from "../../../src/store/postgres/postgres-store.ts";
import { DEFAULT_WRITER_LEASE } from "../../../src/store/postgres/writer-lock.ts";
import { SQL } from "bun";
import { waitFor } from "../../support/daemon.ts";
import { startPostgresCluster, type PostgresCluster } from "../../support/postgres-cluster.ts";
import { audit, key, record, rejection } from "../../unit/store/sqlite-helpers.ts";
import { registerStoreContract } from "../../unit/store/store-contract.ts";

let cluster: PostgresCluster;
let databases = 0;

beforeAll(() => {
  cluster = startPostgresCluster();
});
afterAll(() => cluster?.stop());

registerStoreContract({
  location: async () => cluster.createDatabase(`contract_${++databases}`),
  open: (url) => PostgresStore.open(url),
  openReader: (url) => PostgresReader.open(url),
});

test("two stores sharing one database on purpose (no writer lock) keep each session's seq contiguous", async () => {
  const url = cluster.createDatabase("shared");
  const shared = { writerLock: false };
  const [a, b] = await Promise.all([PostgresStore.open(url, shared), PostgresStore.open(url, shared)]);
  await Promise.all(Array.from({ length: 10 }, (_, i) => a.createSession(record(`s${i}`))));
  await Promise.all(
    Array.from({ length: 10 }, async (_, i) => {
      for (let n = 0; n < 10; n++) {
        await Promise.all([a.append(key(`s${i}`), [audit("a")]), b.append(key(`s${i}`), [audit("b"), audit("b")])]);
      }
    }),
  );
  for (let i = 0; i < 10; i++) {
    const rows = await b.read(key(`s${i}`), 0, 1000);
    expect(rows.map((row) => row.seq)).toEqual(Array.from({ length: 30 }, (_, j) => j + 1));
    expect(await a.head(key(`s${i}`))).toBe(30);
  }
  await Promise.all([a.close(), b.close()]);
});

test("a second daemon's store on a database another holds is refused at open, naming it; once the first closes it opens", async () => {
  const url = cluster.createDatabase("one_writer");
  const first = await PostgresStore.open(url);
  const refused = await rejection(PostgresStore.open(url));
  expect(refused.code).toBe("unavailable");
  expect(refused.message).toContain("in use by another spar daemon");
  expect(refused.message).toContain("/one_writer");
  await first.createSession(record("still-mine"));
  await first.close();
  const second = await PostgresStore.open(url);
  expect((await second.getSession(key("still-mine")))?.id).toBe("still-mine");
  await second.close();
});

test("while the server is down writes and reads fail with unavailable; once it is back the same store works again, its writer lock taken again", async () => {
  const url = cluster.createDatabase("outage");
  const store = await PostgresStore.open(url, { connectTimeoutSeconds: 2 });
  await store.createSession(record("s0"));
  await store.append(key("s0"), [audit("before")]);
  // Several pooled connections, all of them stale once the server restarts.
  await Promise.all(Array.from({ length: 8 }, () => store.head(key("s0"))));
  cluster.pause();
  try {
    expect((await rejection(store.append(key("s0"), [audit("lost")]))).code).toBe("unavailable");
    expect((await rejection(store.probe())).code).toBe("unavailable");
    expect(store.stats.refused).toBeGreaterThan(0);
  } finally {
    cluster.resume();
  }
  await store.probe();
  expect(await Promise.all(Array.from({ length: 8 }, () => store.head(key("s0"))))).toEqual(new Array(8).fill(1));
  expect((await store.append(key("s0"), [audit("after")])).map((row) => row.seq)).toEqual([2]);
  expect(await store.head(key("s0"))).toBe(2);
  // The restart ended the lock's connection; the write after it took the lock again.
  expect((await rejection(PostgresStore.open(url))).message).toContain("in use by another spar daemon");
  await store.close();
});

test("an unreachable server fails the open with unavailable, naming the URL without its credentials", async () => {
  const started = Date.now();
  const error = await rejection(PostgresStore.open("postgres://spar:hunter2@127.0.0.1:1/spar"));
  expect(error.code).toBe("unavailable");
  expect(error.message).toContain("cannot open session store postgres://***@127.0.0.1:1/spar");
  expect(error.message).not.toContain("hunter2");
  expect(Date.now() - started).toBeLessThan(5000);
});

test("a server that never answers fails the open within the connect timeout, never hangs", async () => {
  // A listener that accepts and says nothing: the startup handshake never completes.
  const silent = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const started = Date.now();
  const error = await rejection(
    PostgresStore.open(`postgres://postgres@127.0.0.1:${silent.port}/spar`, { connectTimeoutSeconds: 1 }),
  );
  silent.stop(true);
  expect(error.code).toBe("unavailable");
  expect(Date.now() - started).toBeLessThan(4000);
});

test("a missing database and a non-postgres URL are refused with the reason", async () => {
  const missing = await rejection(PostgresStore.open(`postgres://postgres@127.0.0.1:${cluster.port}/nowhere`));
  expect(missing.code).toBe("unavailable");
  expect(missing.message).toContain('database "nowhere" does not exist');
  const notPostgres = await rejection(PostgresStore.open("/var/lib/spar/sessions.db"));
  expect(notPostgres.code).toBe("unavailable");
  expect(notPostgres.message).toContain("not a postgres:// URL");
});

test("a database written by a newer schema is refused, not downgraded", async () => {
  const url = cluster.createDatabase("newer");
  const store = await PostgresStore.open(url);
  await store.close();
  const { SQL } = await import("bun");
  const sql = new SQL(url);
  await sql`UPDATE spar_schema SET version = 999`;
  await sql.close();
  const error = await rejection(PostgresStore.open(url));
  expect(error.code).toBe("unavailable");
  expect(error.message).toContain("schema version 999");
});

test("a writer lock held by a backend silent past the lease is taken over; a live holder's never is", async () => {
  const url = cluster.createDatabase("stale_writer");
  const lease = { pingMs: 150, staleAfterMs: 1000 };
  // A daemon the server still believes alive (host gone, network parted): its session holds the
  // lock and says nothing more.
  const ghost = new SQL(url, { max: 1 });
  const [taken] = await ghost`SELECT pg_try_advisory_lock(${0x5350_4157}) AS locked`;
  expect(taken.locked).toBe(true);
  const early = await rejection(PostgresStore.open(url, { writerLease: lease }));
  expect(early.message).toContain("in use by another spar daemon");
  // Poll: refused while the ghost is fresh, taken over once it has been silent for a second.
  const heir = await waitFor(
    () => PostgresStore.open(url, { writerLease: lease }).catch(() => undefined),
    10_000,
    "the takeover",
  );
  await heir.createSession(record("after-takeover"));
  await ghost.close().catch(() => {});
  // The heir speaks every 150 ms: another store stays refused past two leases.
  const started = performance.now();
  await waitFor(
    async () => {
      const refused = await rejection(PostgresStore.open(url, { writerLease: lease }));
      expect(refused.message).toContain("in use by another spar daemon");
      return performance.now() - started > 2 * lease.staleAfterMs ? true : undefined;
    },
    15_000,
    "two leases of refusals",
  );
  await heir.close();
}, 30_000);

test("the writer lease users get by default: the holder speaks every 10 s, a silent one is taken over after 30 s", () => {
  expect(DEFAULT_WRITER_LEASE).toEqual({ pingMs: 10_000, staleAfterMs: 30_000 });
});

test("one batch of appends (D491): interleaved sessions get contiguous seqs, an unknown session and a prompt drained twice fail alone", async () => {
  const url = cluster.createDatabase("append_run");
  const store = await PostgresStore.open(url);
  try {
    for (const id of ["a", "b"]) await store.createSession(record(id));
    const item = { promptId: "p1", message: "hi", queuedAt: new Date().toISOString(), wake: true };
    await store.enqueueInbox(key("a"), item);
    // Requested in one tick: one transaction, one run of appends.
    const before = store.stats.transactions;
    const results = await Promise.allSettled([
      store.append(key("a"), [audit("a1"), audit("a2")], { drainedPromptIds: ["p1"] }),
      store.append(key("b"), [audit("b1")]),
      store.append(key("missing"), [audit("x")]),
      store.append(key("a"), [audit("a3")], { drainedPromptIds: ["p1"] }),
      store.append(key("a"), [audit("a4")]),
      store.append(key("b"), [audit("b2"), audit("b3")]),
    ]);
    const seqs = results.map((result) =>
      result.status === "fulfilled" ? result.value.map((row) => row.seq) : (result.reason as { code: string }).code,
    );
    expect(seqs).toEqual([[1, 2], [1], "not_found", "conflict", [3], [2, 3]]);
    expect((await store.read(key("a"), 0, 10)).map((row) => row.seq)).toEqual([1, 2, 3]);
    expect(await store.head(key("b"))).toBe(3);
    expect(await store.pendingInbox(key("a"))).toEqual([]);
    expect(store.stats.transactions - before).toBe(1);
  } finally {
    await store.close();
  }
});
