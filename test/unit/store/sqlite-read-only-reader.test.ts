/**
 * SqliteReader (the operator CLI's view of a sqlite store): it reads a session's merged blocks and
 * its rows still in the `log` table as the store itself does, in seq order, and never changes a
 * byte of the store file. A missing file is not created; a file of an older schema is refused
 * rather than migrated.
 */
import { Database } from "bun:sqlite";
import { afterAll, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { SqliteReader } from "../../../src/store/sqlite/read-only-reader.ts";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.ts";
import { audit, cleanupTempDirs, key, record, tempDb } from "./sqlite-helpers.ts";

afterAll(cleanupTempDirs);

const MANUAL = { mergeThresholdRows: Number.MAX_SAFE_INTEGER, mergeIdleMs: false, checkpoint: false } as const;

test("rows merged into blocks and rows still in the log read back in seq order, as the store reads them", async () => {
  const path = tempDb();
  const store = SqliteStore.open(path, MANUAL);
  await store.createSession(record("a"));
  await store.createSession(record("b"));
  await store.append(key("a"), [audit("a1"), audit("a2")]);
  await store.append(key("b"), [audit("b1")]);
  expect(await store.mergeJournal()).toBe(true);
  await store.append(key("a"), [audit("a3")]);
  await store.append(key("b"), [audit("b2"), audit("b3")]);
  const expected = [await store.read(key("a"), 0, 100), await store.read(key("b"), 0, 100)];
  const reader = SqliteReader.open(path);
  try {
    const rows = await reader.readRows([key("a"), key("b"), key("missing")]);
    expect(rows).toEqual([...expected, []]);
    expect(rows[0]?.map((row) => row.seq)).toEqual([1, 2, 3]);
    expect((await reader.listSessions()).map((session) => session.id)).toEqual(["a", "b"]);
  } finally {
    await reader.close();
    await store.close();
  }
});

test("reading changes no byte of the store file", async () => {
  const path = tempDb();
  const store = SqliteStore.open(path);
  await store.createSession(record("a"));
  await store.append(key("a"), [audit("a1")]);
  await store.close();
  const before = readFileSync(path);
  const reader = SqliteReader.open(path);
  await reader.listSessions();
  await reader.readRows([key("a")]);
  await reader.close();
  expect(readFileSync(path).equals(before)).toBe(true);
});

test("a missing store is refused and not created; an older schema is refused, not migrated", async () => {
  const missing = tempDb();
  expect(() => SqliteReader.open(missing)).toThrow(`session store ${missing} does not exist`);
  expect(existsSync(missing)).toBe(false);
  const path = tempDb();
  const store = SqliteStore.open(path);
  await store.close();
  const db = new Database(path);
  db.exec("PRAGMA user_version = 6");
  db.close();
  expect(() => SqliteReader.open(path)).toThrow("has schema version 6, older than this build's");
  const check = new Database(path, { readonly: true });
  expect(check.query<{ user_version: number }, []>("PRAGMA user_version").get()?.user_version).toBe(6);
  check.close();
});

test("the reader decodes with the store's codec: a malformed log row or block is refused as the store refuses it", async () => {
  const path = tempDb();
  const store = SqliteStore.open(path, MANUAL);
  await store.createSession(record("a"));
  await store.append(key("a"), [audit("a1"), audit("a2")]);
  await store.close();
  const db = new Database(path);
  db.query("UPDATE event_blocks SET last_seq = 3 WHERE session_pk = 1").run();
  db.close();
  const reader = SqliteReader.open(path);
  try {
    await expect(reader.readRows([key("a")])).rejects.toThrow(/is inconsistent: block 1..3 of session #1/);
    const broken = new Database(path);
    broken.query("UPDATE event_blocks SET last_seq = 2 WHERE session_pk = 1").run();
    broken.query("INSERT INTO log (id, body) VALUES (7, ?)").run("[[1, 0, []]]");
    broken.close();
    await expect(reader.readRows([key("a")])).rejects.toThrow(/is inconsistent: log row 7 is not a list of/);
  } finally {
    await reader.close();
  }
});
