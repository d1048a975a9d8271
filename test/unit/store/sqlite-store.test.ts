/** SqliteStore behaviour: seq, group commit, inbox drains, conflicts, tombstones, reopen. */
import { afterAll, describe, expect, test } from "bun:test";
import type { CommittedRow } from "../../../src/core/events.ts";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.ts";
import { audit, cleanupTempDirs, key, record, rejection, tempDb, tombstoned, userMessage } from "./sqlite-helpers.ts";

afterAll(cleanupTempDirs);

async function freshStore(sessions: number): Promise<SqliteStore> {
  const store = SqliteStore.open(tempDb());
  await Promise.all(Array.from({ length: sessions }, (_, i) => store.createSession(record(`s${i}`))));
  return store;
}

function seqs(rows: CommittedRow[]): number[] {
  return rows.map((r) => r.seq);
}

describe("seq", () => {
  test("contiguous from 1 per session under 100 concurrent sessions, in one tick and across ticks", async () => {
    const store = await freshStore(100);
    const labels = new Map<string, string[]>();
    const issue = (id: string, n: number) => {
      const events = Array.from({ length: n }, (_, j) => audit(`${id}:${j}:${Math.random()}`));
      const list = labels.get(id) ?? [];
      list.push(...events.map((e) => e.name));
      labels.set(id, list);
      return store.append(key(id), events);
    };
    // One tick: 5 appends per session, 1-3 events each, none awaited.
    const burst: Promise<CommittedRow[]>[] = [];
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 100; i++) burst.push(issue(`s${i}`, 1 + ((i + round) % 3)));
    }
    const results = await Promise.all(burst);
    // Results handed back carry the seqs assigned at commit.
    for (const rows of results) expect(rows.length).toBeGreaterThan(0);
    // Across ticks: every session appends 20 times, awaiting each.
    await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        for (let n = 0; n < 20; n++) await issue(`s${i}`, 1);
      }),
    );
    for (let i = 0; i < 100; i++) {
      const id = `s${i}`;
      const expected = labels.get(id) ?? [];
      const rows = await store.read(key(id), 0, 10_000);
      expect(seqs(rows)).toEqual(expected.map((_, j) => j + 1));
      expect(rows.map((r) => (r.event.kind === "audit" ? r.event.name : ""))).toEqual(expected);
      expect(await store.head(key(id))).toBe(expected.length);
    }
    await store.close();
  });

  test("append returns the committed rows; empty append resolves []; unknown session is not_found", async () => {
    const store = await freshStore(1);
    const rows = await store.append(key("s0"), [audit("a"), audit("b")]);
    expect(seqs(rows)).toEqual([1, 2]);
    expect(rows[1]?.event.kind).toBe("audit");
    expect(await store.append(key("s0"), [])).toEqual([]);
    expect(await store.append(key("nope"), [])).toEqual([]);
    expect((await rejection(store.append(key("nope"), [audit("x")]))).code).toBe("not_found");
    expect(await store.head(key("nope"))).toBe(0);
    await store.close();
  });

  test("read honours afterSeq, limit and uptoSeq, ascending", async () => {
    const store = await freshStore(1);
    await store.append(
      key("s0"),
      Array.from({ length: 10 }, (_, i) => audit(`e${i}`)),
    );
    expect(seqs(await store.read(key("s0"), 0, 3))).toEqual([1, 2, 3]);
    expect(seqs(await store.read(key("s0"), 7, 100))).toEqual([8, 9, 10]);
    expect(seqs(await store.read(key("s0"), 2, 100, 5))).toEqual([3, 4, 5]);
    expect(seqs(await store.read(key("s0"), 2, 2, 5))).toEqual([3, 4]);
    expect(await store.read(key("s0"), 10, 100)).toEqual([]);
    expect(await store.read(key("s0"), 0, 0)).toEqual([]);
    await store.close();
  });
});

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

describe("inbox", () => {
  const item = (promptId: string, wake: boolean) => ({
    promptId,
    message: `m-${promptId}`,
    queuedAt: "2026-01-01T00:00:00Z",
    wake,
  });

  test("pending in arrival order; awaiting turn only with a waking item", async () => {
    const store = await freshStore(3);
    await store.enqueueInbox(key("s1"), item("p1", false));
    expect(await store.sessionsAwaitingTurn()).toEqual([]);
    await Promise.all([
      store.enqueueInbox(key("s1"), item("p2", true)),
      store.enqueueInbox(key("s2"), item("q1", true)),
    ]);
    await store.enqueueInbox(key("s1"), item("p3", false));
    expect((await store.pendingInbox(key("s1"))).map((i) => i.promptId)).toEqual(["p1", "p2", "p3"]);
    expect((await store.pendingInbox(key("s1")))[1]).toEqual(item("p2", true));
    expect(await store.sessionsAwaitingTurn()).toEqual([key("s1"), key("s2")]);
    expect((await rejection(store.enqueueInbox(key("s1"), item("p1", true)))).code).toBe("conflict");
    await store.close();
  });

  test("drain is atomic with the append that records it", async () => {
    const store = await freshStore(1);
    const s = key("s0");
    await store.enqueueInbox(s, item("p1", true));
    await store.enqueueInbox(s, item("p2", false));
    const rows = await store.append(s, [userMessage("both", ["p1", "p2"])], { drainedPromptIds: ["p1", "p2"] });
    expect(seqs(rows)).toEqual([1]);
    expect(await store.pendingInbox(s)).toEqual([]);
    expect(await store.sessionsAwaitingTurn()).toEqual([]);
    // Draining again, or a prompt never queued, fails the append and writes nothing.
    expect((await rejection(store.append(s, [userMessage("again", ["p1"])], { drainedPromptIds: ["p1"] }))).code).toBe(
      "conflict",
    );
    expect((await rejection(store.append(s, [userMessage("?", ["zz"])], { drainedPromptIds: ["zz"] }))).code).toBe(
      "conflict",
    );
    expect(await store.head(s)).toBe(1);
    // Enqueue and drain in the same tick: ops apply in request order inside one transaction.
    const [, drained] = await Promise.all([
      store.enqueueInbox(s, item("p3", true)),
      store.append(s, [userMessage("p3", ["p3"])], { drainedPromptIds: ["p3"] }),
    ]);
    expect(seqs(drained)).toEqual([2]);
    expect(await store.pendingInbox(s)).toEqual([]);
    expect((await rejection(store.append(s, [], { drainedPromptIds: ["p9"] }))).code).toBe("bad_request");
    await store.close();
  });
});

describe("sessions", () => {
  test("get, list, find by id, touch, title", async () => {
    const store = SqliteStore.open(tempDb());
    await Promise.all([
      store.createSession(record("a")),
      store.createSession(record("a", "other")),
      store.createSession(record("b")),
    ]);
    expect(await store.getSession(key("a"))).toEqual(record("a"));
    expect(await store.getSession(key("zz"))).toBeUndefined();
    expect((await store.listSessions()).map((r) => `${r.app}/${r.id}`)).toEqual(["spar/a", "other/a", "spar/b"]);
    expect(await store.findSessionsById("a")).toEqual([key("a", "other"), key("a")]);
    await store.touchSession(key("a"), "2026-02-02T00:00:00Z");
    await store.setTitle(key("a"), "Hello");
    expect(await store.getSession(key("a"))).toEqual({
      ...record("a"),
      lastTouchedAt: "2026-02-02T00:00:00Z",
      title: "Hello",
    });
    await store.setTitle(key("a"), undefined);
    expect((await store.getSession(key("a")))?.title).toBeUndefined();
    expect((await rejection(store.touchSession(key("zz"), "t"))).code).toBe("not_found");
    expect((await rejection(store.setTitle(key("zz"), "t"))).code).toBe("not_found");
    await store.probe();
    await store.close();
  });

  test("delete leaves a tombstone and removes events and inbox; create clears it", async () => {
    const store = await freshStore(2);
    const s = key("s0");
    await store.append(s, [audit("a"), audit("b")]);
    await store.enqueueInbox(s, { promptId: "p", message: "m", queuedAt: "t", wake: true });
    expect(await tombstoned(store, s)).toBe(false);
    expect(await store.deleteSession(s)).toBe(true);
    expect(await store.deleteSession(s)).toBe(false);
    expect(await store.deleteSession(key("never"))).toBe(false);
    expect(await tombstoned(store, s)).toBe(true);
    expect(await tombstoned(store, key("never"))).toBe(false);
    expect(await store.deletedSessions("s0")).toEqual([{ app: s.app, owner: record("s0").owner }]);
    expect(await store.deletedSessions("never")).toEqual([]);
    expect(await store.getSession(s)).toBeUndefined();
    expect(await store.read(s, 0, 100)).toEqual([]);
    expect(await store.head(s)).toBe(0);
    expect(await store.sessionsAwaitingTurn()).toEqual([]);
    expect((await rejection(store.append(s, [audit("c")]))).code).toBe("not_found");
    await store.createSession(record("s0"));
    expect(await tombstoned(store, s)).toBe(false);
    expect(await store.pendingInbox(s)).toEqual([]);
    expect(seqs(await store.append(s, [audit("c")]))).toEqual([1]);
    expect(await store.head(key("s1"))).toBe(0);
    await store.close();
  });

  test("delete and re-create in one tick", async () => {
    const store = await freshStore(1);
    await store.append(key("s0"), [audit("old")]);
    const [deleted, , rows] = await Promise.all([
      store.deleteSession(key("s0")),
      store.createSession(record("s0")),
      store.append(key("s0"), [audit("new")]),
    ]);
    expect(deleted).toBe(true);
    expect(seqs(rows)).toEqual([1]);
    expect(await tombstoned(store, key("s0"))).toBe(false);
    await store.close();
  });
});

describe("durability and lifecycle", () => {
  test("rows survive close and reopen; seq continues", async () => {
    const path = tempDb();
    const first = SqliteStore.open(path);
    await first.createSession(record("s0"));
    await first.append(key("s0"), [audit("a"), audit("b")]);
    await first.enqueueInbox(key("s0"), { promptId: "p", message: "m", queuedAt: "t", wake: true });
    await first.setTitle(key("s0"), "T");
    await first.close();
    const second = SqliteStore.open(path);
    expect((await second.getSession(key("s0")))?.title).toBe("T");
    expect(seqs(await second.read(key("s0"), 0, 10))).toEqual([1, 2]);
    expect(await second.head(key("s0"))).toBe(2);
    expect(await second.sessionsAwaitingTurn()).toEqual([key("s0")]);
    expect(seqs(await second.append(key("s0"), [audit("c")]))).toEqual([3]);
    await second.close();
  });

  test("close commits queued writes, then refuses new ones", async () => {
    const path = tempDb();
    const store = SqliteStore.open(path);
    const created = store.createSession(record("s0"));
    const appended = store.append(key("s0"), [audit("late")]);
    await store.close();
    await created;
    expect(seqs(await appended)).toEqual([1]);
    expect((await rejection(store.append(key("s0"), [audit("x")]))).code).toBe("unavailable");
    expect((await rejection(store.head(key("s0")))).code).toBe("unavailable");
    await store.close();
    const again = SqliteStore.open(path);
    expect(await again.head(key("s0"))).toBe(1);
    await again.close();
  });
});
