/**
 * What only the sqlite store promises: group commit (one transaction per tick, early flush) and a
 * failing statement failing its op alone. The Store contract both stores keep is store-contract.ts
 * (sqlite-contract.test.ts).
 */
import { afterAll, describe, expect, test } from "bun:test";
import type { CommittedRow } from "../../../src/core/events.ts";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.ts";
import { audit, cleanupTempDirs, key, record, tempDb } from "./sqlite-helpers.ts";

afterAll(cleanupTempDirs);

async function freshStore(sessions: number): Promise<SqliteStore> {
  const store = SqliteStore.open(tempDb());
  await Promise.all(Array.from({ length: sessions }, (_, i) => store.createSession(record(`s${i}`))));
  return store;
}

function seqs(rows: CommittedRow[]): number[] {
  return rows.map((r) => r.seq);
}

describe("group commit", () => {
  test("writes requested in one tick share one transaction", async () => {
    const store = await freshStore(100);
    const before = store.stats;
    await Promise.all(Array.from({ length: 100 }, (_, i) => store.append(key(`s${i}`), [audit("x")])));
    const after = store.stats;
    expect(after.transactions - before.transactions).toBe(1);
    expect(after.ops - before.ops).toBe(100);
    expect(after.rows - before.rows).toBe(100);
    await store.close();
  });

  test("concurrent awaiting writers are batched into few transactions", async () => {
    const store = await freshStore(100);
    const before = store.stats;
    await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        for (let n = 0; n < 20; n++) await store.append(key(`s${i}`), [audit("x")]);
      }),
    );
    const after = store.stats;
    const ops = after.ops - before.ops;
    const transactions = after.transactions - before.transactions;
    expect(ops).toBe(2000);
    expect(transactions).toBeLessThanOrEqual(ops / 50);
    expect(after.largestBatch).toBeGreaterThanOrEqual(100);
    await store.close();
  });

  test("a batch past maxBatchRows is flushed early, and stays correct", async () => {
    const store = SqliteStore.open(tempDb(), { maxBatchRows: 64 });
    await store.createSession(record("s0"));
    const before = store.stats.transactions;
    const all = await Promise.all(Array.from({ length: 256 }, () => store.append(key("s0"), [audit("x")])));
    expect(all.map((rows) => rows[0]?.seq)).toEqual(Array.from({ length: 256 }, (_, i) => i + 1));
    expect(store.stats.transactions - before).toBe(4);
    await store.close();
  });

  test("flushOn immediate batches too", async () => {
    const store = SqliteStore.open(tempDb(), { flushOn: "immediate" });
    await store.createSession(record("s0"));
    const rows = await Promise.all([store.append(key("s0"), [audit("a")]), store.append(key("s0"), [audit("b")])]);
    expect(rows.map((r) => r[0]?.seq)).toEqual([1, 2]);
    await store.close();
  });

  test("one failing op does not fail the others in its batch", async () => {
    const store = await freshStore(1);
    const before = store.stats.transactions;
    const settled = await Promise.allSettled([
      store.createSession(record("s0")),
      store.createSession(record("fresh")),
      store.append(key("s0"), [audit("kept")]),
      store.append(key("ghost"), [audit("lost")]),
      store.append(key("fresh"), [audit("same-tick")]),
      store.enqueueInbox(key("ghost"), { promptId: "p", message: "m", queuedAt: "t", wake: true }),
    ]);
    expect(store.stats.transactions - before).toBe(1);
    const codes = settled.map((s) => (s.status === "rejected" ? (s.reason as { code: string }).code : "ok"));
    expect(codes).toEqual(["conflict", "ok", "ok", "not_found", "ok", "not_found"]);
    expect(await store.head(key("s0"))).toBe(1);
    expect(await store.head(key("fresh"))).toBe(1);
    expect((await store.getSession(key("fresh")))?.owner).toBe("local");
    await store.close();
  });
});

describe("statement failures", () => {
  test("an op whose statement fails (not a store refusal) fails alone; the rest of its batch commits", async () => {
    const store = await freshStore(1);
    // A BLOB where the STRICT table wants TEXT: SQLITE_CONSTRAINT_DATATYPE, a real statement error.
    const bad = { ...record("bad"), owner: new Uint8Array([1, 2]) as unknown as string };
    const settled = await Promise.allSettled([
      store.append(key("s0"), [audit("a")]),
      store.createSession(bad),
      store.createSession(record("good")),
      store.append(key("s0"), [audit("b")]),
    ]);
    const codes = settled.map((s) => (s.status === "rejected" ? (s.reason as { code: string }).code : "ok"));
    expect(codes).toEqual(["ok", "internal", "ok", "ok"]);
    expect(await store.getSession(key("bad"))).toBeUndefined();
    expect(await store.getSession(key("good"))).toBeDefined();
    expect(seqs(await store.read(key("s0"), 0, 10))).toEqual([1, 2]);
    expect(store.stats.refused).toBe(0);
    await store.close();
  });
});
