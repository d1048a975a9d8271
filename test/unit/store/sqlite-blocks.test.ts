/**
 * Schema v4 (D150): one `log` row per group commit, merged into per-session `event_blocks`
 * (a rowid table since v5, D152).
 * Upgrade of a v3 file written by the v3 code (fixtures/v3-store.sqlite, made as
 * fixtures/make-v3-store.txt says: merged rows, rows a crash left in the v3 journal, a deleted
 * session, inbox, claim and boot rows), the log row per commit, a crash image holding log rows of
 * a session deleted later, blocks cut at a seq gap of a v3 file, and malformed log rows and
 * blocks refused rather than misread.
 */
import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import type { CommittedRow } from "../../../src/core/events.ts";
import { SCHEMA_VERSION } from "../../../src/store/sqlite/migrations.ts";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.ts";
import { audit, cleanupTempDirs, key, record, tempDb, tombstoned } from "./sqlite-helpers.ts";

afterAll(cleanupTempDirs);

const V3_FIXTURE = join(import.meta.dir, "fixtures/v3-store.sqlite");
const MANUAL = { mergeThresholdRows: Number.MAX_SAFE_INTEGER, mergeIdleMs: false, checkpoint: false } as const;

function names(rows: CommittedRow[]): string[] {
  return rows.map((r) => (r.event.kind === "audit" ? r.event.name : r.event.kind));
}

function range(prefix: string, from: number, to: number): string[] {
  return Array.from({ length: to - from + 1 }, (_, i) => `${prefix}:${from + i}`);
}

function query<T>(path: string, sql: string): T[] {
  const db = new Database(path, { readonly: true });
  try {
    return db.query(sql).all() as T[];
  } finally {
    db.close();
  }
}

describe("a v3 file written by the v3 code", () => {
  test("upgrades through v4 (blocks) and v5 (rowid blocks) with every row, session, inbox item, claim and boot, and keeps working", async () => {
    const path = tempDb();
    copyFileSync(V3_FIXTURE, path);
    expect(query<{ user_version: number }>(path, "PRAGMA user_version")[0]?.user_version).toBe(3);

    const store = SqliteStore.open(path, MANUAL);
    expect((await store.listSessions()).map((s) => [s.id, s.title ?? null, s.viewers])).toEqual([
      ["merged", "Merged", ["v3"]],
      ["split", null, ["v3"]],
      ["journal-only", null, ["v3"]],
    ]);
    expect(await store.head(key("merged"))).toBe(70);
    expect(await store.head(key("split"))).toBe(5);
    expect(await store.head(key("journal-only"))).toBe(1);
    expect(names(await store.read(key("merged"), 0, 100))).toEqual(range("merged", 1, 70));
    expect(names(await store.read(key("merged"), 60, 5))).toEqual(range("merged", 61, 65));
    expect(names(await store.read(key("split"), 0, 100))).toEqual(range("split", 1, 5));
    expect(names(await store.read(key("journal-only"), 0, 100))).toEqual(["journal-only:1"]);
    const row = (await store.read(key("merged"), 69, 1))[0];
    expect(row?.event).toEqual({
      kind: "audit",
      id: "id-merged:70",
      ts: "2026-01-01T00:00:00.000Z",
      invocationId: "inv-1",
      author: "agent",
      name: "merged:70",
      metadata: { note: `é merged:70 \u2028 "q"` },
    });
    expect(await store.getSession(key("deleted"))).toBeUndefined();
    expect(await tombstoned(store, key("deleted"))).toBe(true);
    expect((await store.pendingInbox(key("split"))).map((i) => i.promptId)).toEqual(["p1"]);
    const claim = {
      interruption: "int-1",
      owner: "boot-b",
      now: "2026-01-01T00:00:30Z",
      expiresAt: "2026-01-01T00:02:00Z",
    };
    expect(await store.claimInterruption(key("split"), claim)).toBe(false);
    expect(await store.beginBoot("boot-b", "2026-01-01T00:05:00Z", "2025-12-31T00:00:00Z")).toBe(1);

    const appended = await store.append(key("split"), [audit("split:6")], { drainedPromptIds: ["p1"] });
    expect(appended.map((r) => r.seq)).toEqual([6]);
    await store.close();

    expect(query<{ user_version: number }>(path, "PRAGMA user_version")[0]?.user_version).toBe(SCHEMA_VERSION);
    const tables = query<{ name: string }>(
      path,
      "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name",
    ).map((t) => t.name);
    expect(tables).toContain("event_blocks");
    expect(tables).not.toContain("events");
    expect(tables).not.toContain("journal");
    expect(tables).not.toContain("event_blocks_v5");
    // v5: a rowid table keyed (session_pk, first_seq), no longer WITHOUT ROWID (D152).
    const ddl = query<{ sql: string }>(path, "SELECT sql FROM sqlite_schema WHERE name = 'event_blocks'")[0]?.sql ?? "";
    expect(ddl).toContain("PRIMARY KEY (session_pk, first_seq)");
    expect(ddl).not.toMatch(/WITHOUT ROWID/i);
    // The v3 rows became blocks of at most 64 events (merged: 64 + 6), cut per session.
    expect(
      query<{ session_pk: number; first_seq: number; last_seq: number }>(
        path,
        "SELECT session_pk, first_seq, last_seq FROM event_blocks ORDER BY 1, 2",
      ),
    ).toEqual([
      { session_pk: 1, first_seq: 1, last_seq: 64 },
      { session_pk: 1, first_seq: 65, last_seq: 70 },
      { session_pk: 2, first_seq: 1, last_seq: 5 },
      { session_pk: 2, first_seq: 6, last_seq: 6 },
      { session_pk: 3, first_seq: 1, last_seq: 1 },
    ]);

    const again = SqliteStore.open(path, MANUAL);
    expect(names(await again.read(key("split"), 0, 100))).toEqual(range("split", 1, 6));
    expect(await again.pendingInbox(key("split"))).toEqual([]);
    await again.close();
  });

  test("a v3 file whose events skip a seq: blocks are cut at the gap (and every 64 rows), reads return the rows stored", async () => {
    const path = tempDb();
    copyFileSync(V3_FIXTURE, path);
    const db = new Database(path);
    db.exec("DELETE FROM events WHERE session_pk = 1 AND seq = 30");
    db.close();
    const store = SqliteStore.open(path, MANUAL);
    const rows = await store.read(key("merged"), 27, 5);
    expect(rows.map((r) => r.seq)).toEqual([28, 29, 31, 32]);
    expect(names(rows)).toEqual(["merged:28", "merged:29", "merged:31", "merged:32"]);
    await store.close();
    expect(
      query<{ first_seq: number; last_seq: number }>(
        path,
        "SELECT first_seq, last_seq FROM event_blocks WHERE session_pk = 1 ORDER BY 1",
      ),
    ).toEqual([
      { first_seq: 1, last_seq: 29 },
      { first_seq: 31, last_seq: 65 },
      { first_seq: 66, last_seq: 70 },
    ]);
  });
});

describe("the log", () => {
  test("one group commit writes one log row, however many sessions and events it holds", async () => {
    const path = tempDb();
    const store = SqliteStore.open(path, MANUAL);
    await Promise.all(["a", "b", "c"].map((id) => store.createSession(record(id))));
    await Promise.all([
      store.append(key("a"), [audit("a:1"), audit("a:2")]),
      store.append(key("b"), [audit("b:1")]),
      store.append(key("c"), [audit("c:1")]),
      store.append(key("a"), [audit("a:3")]),
    ]);
    expect(store.stats.journalRows).toBe(5);
    const image = crashImage(path);
    await store.close();
    const log = query<{ id: number; body: string }>(image, "SELECT id, body FROM log");
    expect(log).toHaveLength(1);
    const segments = JSON.parse(log[0]?.body ?? "[]") as [number, number, { name: string }[]][];
    expect(segments.map(([pk, first, events]) => [pk, first, events.map((e) => e.name)])).toEqual([
      [1, 1, ["a:1", "a:2"]],
      [2, 1, ["b:1"]],
      [3, 1, ["c:1"]],
      [1, 3, ["a:3"]],
    ]);
  });

  test("a crash image with log rows of a session deleted later reopens without them, exact for the rest", async () => {
    const path = tempDb();
    const store = SqliteStore.open(path, MANUAL);
    await Promise.all(["keep", "drop"].map((id) => store.createSession(record(id))));
    await Promise.all([store.append(key("keep"), [audit("keep:1")]), store.append(key("drop"), [audit("drop:1")])]);
    await store.mergeJournal();
    await Promise.all([store.append(key("keep"), [audit("keep:2")]), store.append(key("drop"), [audit("drop:2")])]);
    expect(await store.deleteSession(key("drop"))).toBe(true);
    await store.append(key("keep"), [audit("keep:3")]);
    const image = crashImage(path);
    await store.close();

    const reopened = SqliteStore.open(image, MANUAL);
    expect(reopened.stats.journalRows).toBe(2);
    expect(names(await reopened.read(key("keep"), 0, 10))).toEqual(["keep:1", "keep:2", "keep:3"]);
    expect(await reopened.getSession(key("drop"))).toBeUndefined();
    await reopened.createSession(record("drop"));
    expect(await reopened.head(key("drop"))).toBe(0);
    expect((await reopened.append(key("drop"), [audit("new:1")])).map((r) => r.seq)).toEqual([1]);
    await reopened.close();
    expect(query<{ n: number }>(image, "SELECT count(*) AS n FROM log")[0]?.n).toBe(0);
    const again = SqliteStore.open(image, MANUAL);
    expect(names(await again.read(key("keep"), 0, 10))).toEqual(["keep:1", "keep:2", "keep:3"]);
    expect(names(await again.read(key("drop"), 0, 10))).toEqual(["new:1"]);
    await again.close();
  });
});

describe("inconsistent files are refused, not misread", () => {
  test("a log row that is not [[session, seq, events], ...] refuses the open, naming the row", async () => {
    const path = tempDb();
    const store = SqliteStore.open(path, MANUAL);
    await store.createSession(record("a"));
    await store.close();
    for (const body of ["not json", '[[1, 0, [{"kind": "audit"}]]]', "[[1, 1, []]]", "{}"]) {
      const db = new Database(path);
      db.query("INSERT OR REPLACE INTO log (id, body) VALUES (1, ?)").run(body);
      db.close();
      expect(() => SqliteStore.open(path, MANUAL)).toThrow(/is inconsistent: log row 1/);
    }
    const db = new Database(path);
    db.query("INSERT OR REPLACE INTO log (id, body) VALUES (1, ?)").run(JSON.stringify([[1, 2, [audit("a:2")]]]));
    db.close();
    expect(() => SqliteStore.open(path, MANUAL)).toThrow(/seq 2 of session #1 does not follow seq 0/);
  });

  test("a block whose array does not hold last_seq - first_seq + 1 events fails the read; other rows still read", async () => {
    const path = tempDb();
    const store = SqliteStore.open(path, MANUAL);
    await Promise.all(["a", "b"].map((id) => store.createSession(record(id))));
    await store.append(key("a"), [audit("a:1"), audit("a:2"), audit("a:3")]);
    await store.append(key("b"), [audit("b:1")]);
    await store.close();
    const db = new Database(path);
    db.query("UPDATE event_blocks SET last_seq = 4 WHERE session_pk = 1").run();
    db.close();
    const reopened = SqliteStore.open(path, MANUAL);
    await expect(reopened.read(key("a"), 0, 10)).rejects.toThrow(/is inconsistent: block 1..4 of session #1/);
    expect(names(await reopened.read(key("b"), 0, 10))).toEqual(["b:1"]);
    await reopened.close();
  });
});

/**
 * The file as a crash would leave it now: copies of the main file and the WAL, taken between
 * transactions of a store opened with `checkpoint: false` (nothing else writes either file).
 */
function crashImage(path: string): string {
  const copy = tempDb();
  copyFileSync(path, copy);
  if (existsSync(`${path}-wal`)) copyFileSync(`${path}-wal`, `${copy}-wal`);
  return copy;
}
