/**
 * The Store contract, one suite for every implementation (sqlite, postgres): seq contiguous per
 * session under concurrency, read bounds, conflict/not_found codes, one failing op not failing its
 * batch, inbox order and drains atomic with appends, sessions, ACLs, tombstones, abort markers,
 * interruption claims, boot records, durability across close and reopen, close semantics; the
 * write rules' refusals in the same words on every engine; and the engine's read-only reader (the
 * operator CLI's) reading what the store committed, beside it and after it. `registerStoreContract(harness)`
 * registers the tests in the calling file.
 */
import { describe, expect, test } from "bun:test";
import type { CommittedRow } from "../../../src/core/events.ts";
import type { Store } from "../../../src/core/session-store.ts";
import type { StoreReader } from "../../../src/core/store-reader.ts";
import { audit, key, record, rejection, tombstoned, userMessage } from "./sqlite-helpers.ts";

export interface StoreHarness {
  /** A fresh, empty location (a file path, a database URL): opened and reopened with `open`. */
  location(): Promise<string>;
  open(location: string): Promise<Store>;
  /** The engine's read-only reader of a location (it takes no lock and never writes). */
  openReader(location: string): Promise<StoreReader>;
}

function seqs(rows: CommittedRow[]): number[] {
  return rows.map((r) => r.seq);
}

const item = (promptId: string, wake: boolean) => ({
  promptId,
  message: `m-${promptId}`,
  queuedAt: "2026-01-01T00:00:00Z",
  wake,
});

const at = (ms: number) => new Date(Date.UTC(2026, 10, 22, 0, 0, 0) + ms).toISOString();
const claim = (owner: string, nowMs: number) => ({
  interruption: "e-1",
  owner,
  now: at(nowMs),
  expiresAt: at(nowMs + 600_000),
});

export function registerStoreContract(harness: StoreHarness): void {
  const fresh = async (sessions = 0): Promise<Store> => {
    const store = await harness.open(await harness.location());
    await Promise.all(Array.from({ length: sessions }, (_, i) => store.createSession(record(`s${i}`))));
    return store;
  };

  describe("seq", () => {
    test("contiguous from 1 per session under 100 concurrent sessions, in one tick and across ticks", async () => {
      const store = await fresh(100);
      const labels = new Map<string, string[]>();
      const issue = (id: string, n: number) => {
        const events = Array.from({ length: n }, (_, j) => audit(`${id}:${j}:${Math.random()}`));
        labels.set(id, [...(labels.get(id) ?? []), ...events.map((e) => e.name)]);
        return store.append(key(id), events);
      };
      const burst: Promise<CommittedRow[]>[] = [];
      for (let round = 0; round < 5; round++) {
        for (let i = 0; i < 100; i++) burst.push(issue(`s${i}`, 1 + ((i + round) % 3)));
      }
      for (const rows of await Promise.all(burst)) expect(rows.length).toBeGreaterThan(0);
      await Promise.all(
        Array.from({ length: 100 }, async (_, i) => {
          for (let n = 0; n < 10; n++) await issue(`s${i}`, 1);
        }),
      );
      for (let i = 0; i < 100; i++) {
        const expected = labels.get(`s${i}`) ?? [];
        const rows = await store.read(key(`s${i}`), 0, 10_000);
        expect(seqs(rows)).toEqual(expected.map((_, j) => j + 1));
        expect(rows.map((r) => (r.event.kind === "audit" ? r.event.name : ""))).toEqual(expected);
        expect(await store.head(key(`s${i}`))).toBe(expected.length);
      }
      await store.close();
    });

    test("append returns the committed rows; empty append resolves []; unknown session is not_found", async () => {
      const store = await fresh(1);
      const rows = await store.append(key("s0"), [audit("a"), audit("b")]);
      expect(seqs(rows)).toEqual([1, 2]);
      expect(rows[1]?.event.kind).toBe("audit");
      expect(await store.append(key("s0"), [])).toEqual([]);
      expect(await store.append(key("nope"), [])).toEqual([]);
      expect((await rejection(store.append(key("nope"), [audit("x")]))).code).toBe("not_found");
      expect(await store.head(key("nope"))).toBe(0);
      expect((await rejection(store.append(key("s0"), [], { drainedPromptIds: ["p"] }))).code).toBe("bad_request");
      await store.close();
    });

    test("read honours afterSeq, limit and uptoSeq, ascending; events round-trip", async () => {
      const store = await fresh(1);
      const events = Array.from({ length: 10 }, (_, i) => audit(`e${i}`, i));
      await store.append(key("s0"), events);
      expect((await store.read(key("s0"), 0, 100)).map((r) => r.event)).toEqual(events);
      expect(seqs(await store.read(key("s0"), 0, 3))).toEqual([1, 2, 3]);
      expect(seqs(await store.read(key("s0"), 7, 100))).toEqual([8, 9, 10]);
      expect(seqs(await store.read(key("s0"), 2, 100, 5))).toEqual([3, 4, 5]);
      expect(seqs(await store.read(key("s0"), 2, 2, 5))).toEqual([3, 4]);
      expect(await store.read(key("s0"), 10, 100)).toEqual([]);
      expect(await store.read(key("s0"), 0, 0)).toEqual([]);
      expect(await store.read(key("nope"), 0, 10)).toEqual([]);
      await store.close();
    });
  });

  test("one failing op does not fail the others requested with it", async () => {
    const store = await fresh(1);
    const settled = await Promise.allSettled([
      store.createSession(record("s0")),
      store.createSession(record("fresh")),
      store.append(key("s0"), [audit("kept")]),
      store.append(key("ghost"), [audit("lost")]),
      store.append(key("fresh"), [audit("same-tick")]),
      store.enqueueInbox(key("ghost"), item("p", true)),
    ]);
    const codes = settled.map((s) => (s.status === "rejected" ? (s.reason as { code: string }).code : "ok"));
    expect(codes).toEqual(["conflict", "ok", "ok", "not_found", "ok", "not_found"]);
    expect(await store.head(key("s0"))).toBe(1);
    expect(await store.head(key("fresh"))).toBe(1);
    expect((await store.getSession(key("fresh")))?.owner).toBe("local");
    await store.close();
  });

  describe("inbox", () => {
    test("pending in arrival order; awaiting turn only with a waking item", async () => {
      const store = await fresh(3);
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

    test("an item keeps the trace context of the request that queued it; a malformed one is not stored", async () => {
      const store = await fresh(1);
      const s = key("s0");
      const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
      await store.enqueueInbox(s, { ...item("t1", true), trace: { traceparent, tracestate: "vendor=1" } });
      await store.enqueueInbox(s, { ...item("t2", true), trace: { traceparent: "00-not-a-trace-01" } });
      await store.enqueueInbox(s, item("t3", true));
      const pending = await store.pendingInbox(s);
      expect(pending[0]?.trace).toEqual({ traceparent, tracestate: "vendor=1" });
      expect(pending[1]?.trace).toBeUndefined();
      expect(pending[2]).toEqual(item("t3", true));
      await store.close();
    });

    test("drain is atomic with the append that records it", async () => {
      const store = await fresh(1);
      const s = key("s0");
      await store.enqueueInbox(s, item("p1", true));
      await store.enqueueInbox(s, item("p2", false));
      const rows = await store.append(s, [userMessage("both", ["p1", "p2"])], { drainedPromptIds: ["p1", "p2"] });
      expect(seqs(rows)).toEqual([1]);
      expect(await store.pendingInbox(s)).toEqual([]);
      expect(await store.sessionsAwaitingTurn()).toEqual([]);
      const again = store.append(s, [userMessage("again", ["p1"])], { drainedPromptIds: ["p1"] });
      expect((await rejection(again)).code).toBe("conflict");
      const never = store.append(s, [userMessage("?", ["zz"])], { drainedPromptIds: ["zz"] });
      expect((await rejection(never)).code).toBe("conflict");
      expect(await store.head(s)).toBe(1);
      // Enqueue and drain in the same tick: ops apply in request order.
      const [, drained] = await Promise.all([
        store.enqueueInbox(s, item("p3", true)),
        store.append(s, [userMessage("p3", ["p3"])], { drainedPromptIds: ["p3"] }),
      ]);
      expect(seqs(drained)).toEqual([2]);
      expect(await store.pendingInbox(s)).toEqual([]);
      await store.close();
    });
  });

  describe("sessions", () => {
    test("get, list, find by id, touch, title, acl", async () => {
      const store = await fresh();
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
      await store.setAcl(key("a"), ["v9"], []);
      expect(await store.getSession(key("a"))).toEqual({
        ...record("a"),
        lastTouchedAt: "2026-02-02T00:00:00Z",
        title: "Hello",
        viewers: ["v9"],
        contributors: [],
      });
      await store.setTitle(key("a"), undefined);
      expect((await store.getSession(key("a")))?.title).toBeUndefined();
      expect((await rejection(store.touchSession(key("zz"), "t"))).code).toBe("not_found");
      expect((await rejection(store.setTitle(key("zz"), "t"))).code).toBe("not_found");
      expect((await rejection(store.setAcl(key("zz"), [], []))).code).toBe("not_found");
      await store.probe();
      await store.close();
    });

    test("delete leaves a tombstone and removes events and inbox; create clears it", async () => {
      const store = await fresh(2);
      const s = key("s0");
      await store.append(s, [audit("a"), audit("b")]);
      await store.enqueueInbox(s, item("p", true));
      expect(await tombstoned(store, s)).toBe(false);
      expect(await store.deleteSession(s)).toBe(true);
      expect(await store.deleteSession(s)).toBe(false);
      expect(await store.deleteSession(key("never"))).toBe(false);
      expect(await tombstoned(store, s)).toBe(true);
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
      const store = await fresh(1);
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

  test("the abort marker: once, after a reopen; a second abort is a conflict; no event row", async () => {
    const where = await harness.location();
    const marker = { reason: "bad rollout", at: "2026-08-16T09:00:00.000Z", by: "svc-inject" };
    const first = await harness.open(where);
    await first.createSession(record("s0"));
    await first.createSession(record("s1"));
    expect((await first.getSession(key("s0")))?.abort).toBeUndefined();
    await first.abortSession(key("s0"), marker);
    const again = await rejection(first.abortSession(key("s0"), { ...marker, reason: "twice" }));
    expect(again.code).toBe("conflict");
    expect(again.message).toBe('session "s0": session already aborted');
    expect((await rejection(first.abortSession(key("nope"), marker))).code).toBe("not_found");
    await first.close();
    const second = await harness.open(where);
    expect((await second.getSession(key("s0")))?.abort).toEqual(marker);
    expect((await second.getSession(key("s1")))?.abort).toBeUndefined();
    expect((await second.listSessions()).find((row) => row.id === "s0")?.abort).toEqual(marker);
    expect(await second.head(key("s0"))).toBe(0);
    await second.close();
  });

  describe("coordination", () => {
    test("an interruption claim has one holder until it expires", async () => {
      const where = await harness.location();
      const store = await harness.open(where);
      expect(await store.claimInterruption(key("s"), claim("daemon-a", 0))).toBe(true);
      expect(await store.claimInterruption(key("s"), claim("daemon-b", 1000))).toBe(false);
      expect(await store.claimInterruption(key("s"), claim("daemon-a", 2000))).toBe(true);
      expect(await store.claimInterruption(key("other"), claim("daemon-b", 2000))).toBe(true);
      expect(await store.claimInterruption(key("s"), { ...claim("daemon-b", 0), interruption: "e-2" })).toBe(true);
      await store.close();
      const reopened = await harness.open(where);
      expect(await reopened.claimInterruption(key("s"), claim("daemon-b", 600_000))).toBe(false);
      expect(await reopened.claimInterruption(key("s"), claim("daemon-b", 602_001))).toBe(true);
      expect(await reopened.claimInterruption(key("s"), claim("daemon-a", 603_000))).toBe(false);
      await reopened.close();
    });

    test("boot records: unclean runs in the window are counted, orderly stops and old runs are not", async () => {
      const store = await fresh();
      expect(await store.beginBoot("b1", at(0), at(-600_000))).toBe(0);
      expect(await store.beginBoot("b2", at(1000), at(-599_000))).toBe(1);
      await store.endBoot("b2");
      expect(await store.beginBoot("b3", at(2000), at(-598_000))).toBe(1);
      expect(await store.beginBoot("b4", at(700_000), at(100_000))).toBe(0);
      await store.close();
    });
  });

  test("the write rules' refusals read the same on every engine", async () => {
    const store = await fresh(2);
    const s0 = key("s0");
    await store.enqueueInbox(s0, item("p1", true));
    const messages = await Promise.all(
      [
        store.append(key("nope"), [audit("x")]),
        store.createSession(record("s1")),
        store.enqueueInbox(s0, item("p1", true)),
        store.append(s0, [userMessage("?", ["zz"])], { drainedPromptIds: ["zz"] }),
        store.append(s0, [userMessage("?", ["p1"])], { drainedPromptIds: ["p1", "p1"] }),
        store.append(s0, [], { drainedPromptIds: ["p1"] }),
      ].map(async (refused) => (await rejection(refused)).message),
    );
    expect(messages).toEqual([
      "session spar/nope not found",
      "session spar/s1 already exists",
      "prompt p1 is already in session spar/s0",
      "prompt zz is not pending in the inbox of session spar/s0",
      "drainedPromptIds holds a prompt id twice",
      "drainedPromptIds given without events to record them",
    ]);
    await store.close();
    expect((await rejection(store.head(s0))).message).toMatch(/^session store .+ is closed$/);
  });

  describe("the read-only reader", () => {
    test("reads every committed row in seq order beside the open store and after it closed; lists the sessions", async () => {
      const where = await harness.location();
      const store = await harness.open(where);
      await Promise.all(["a", "b", "c"].map((id) => store.createSession(record(id))));
      await store.append(key("a"), [audit("a1"), audit("a2")]);
      await Promise.all([store.append(key("b"), [audit("b1")]), store.append(key("a"), [audit("a3")])]);
      const wanted = [key("a"), key("b"), key("c"), key("missing")];
      const expected = await Promise.all(wanted.map((session) => store.read(session, 0, 1000)));
      expect(expected.map(seqs)).toEqual([[1, 2, 3], [1], [], []]);
      const beside = await harness.openReader(where);
      try {
        expect(await beside.readRows(wanted)).toEqual(expected);
        expect(await beside.listSessions()).toEqual(await store.listSessions());
      } finally {
        await beside.close();
      }
      await store.close();
      const after = await harness.openReader(where);
      try {
        expect(await after.readRows(wanted)).toEqual(expected);
        expect((await after.listSessions()).map((row) => row.id)).toEqual(["a", "b", "c"]);
      } finally {
        await after.close();
      }
    });

    test("a location no store has written is refused with unavailable", async () => {
      const refused = await rejection(harness.openReader(await harness.location()));
      expect(refused.code).toBe("unavailable");
      expect(refused.message).toContain("session store");
    });
  });

  describe("durability and lifecycle", () => {
    test("rows survive close and reopen; seq continues", async () => {
      const where = await harness.location();
      const first = await harness.open(where);
      await first.createSession(record("s0"));
      await first.append(key("s0"), [audit("a"), audit("b")]);
      await first.enqueueInbox(key("s0"), item("p", true));
      await first.setTitle(key("s0"), "T");
      await first.deleteSession(key("gone")).then(() => first.createSession(record("gone")));
      await first.deleteSession(key("gone"));
      await first.close();
      const second = await harness.open(where);
      expect((await second.getSession(key("s0")))?.title).toBe("T");
      expect(seqs(await second.read(key("s0"), 0, 10))).toEqual([1, 2]);
      expect(await second.head(key("s0"))).toBe(2);
      expect(await second.sessionsAwaitingTurn()).toEqual([key("s0")]);
      expect(await tombstoned(second, key("gone"))).toBe(true);
      expect(seqs(await second.append(key("s0"), [audit("c")]))).toEqual([3]);
      await second.close();
    });

    test("close commits queued writes, then refuses new ones", async () => {
      const where = await harness.location();
      const store = await harness.open(where);
      const created = store.createSession(record("s0"));
      const appended = store.append(key("s0"), [audit("late")]);
      await store.close();
      await created;
      expect(seqs(await appended)).toEqual([1]);
      expect((await rejection(store.append(key("s0"), [audit("x")]))).code).toBe("unavailable");
      expect((await rejection(store.head(key("s0")))).code).toBe("unavailable");
      await store.close();
      const again = await harness.open(where);
      expect(await again.head(key("s0"))).toBe(1);
      await again.close();
    });
  });
}
