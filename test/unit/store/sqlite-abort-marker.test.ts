/**
 * The abort marker on a session's row (schema v7): written once, read back with the record,
 * survives a reopen, refused a second time (conflict) and for a missing session (not_found), never
 * an event row; a v6 file is migrated with its sessions unaborted.
 */
import { Database } from "bun:sqlite";
import { afterAll, expect, test } from "bun:test";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.ts";
import { SCHEMA_VERSION } from "../../../src/store/sqlite/migrations.ts";
import { cleanupTempDirs, key, record, rejection, tempDb } from "./sqlite-helpers.ts";

afterAll(cleanupTempDirs);

const marker = { reason: "bad rollout", at: "2026-08-16T09:00:00.000Z", by: "svc-inject" };

test("the marker is on the record after a reopen, once; a second abort is a conflict; no event row is written", async () => {
  const path = tempDb();
  const first = SqliteStore.open(path);
  await first.createSession(record("s0"));
  await first.createSession(record("s1"));
  expect((await first.getSession(key("s0")))?.abort).toBeUndefined();
  await first.abortSession(key("s0"), marker);
  const again = await rejection(first.abortSession(key("s0"), { ...marker, reason: "twice" }));
  expect(again.code).toBe("conflict");
  expect(again.message).toBe('session "s0": session already aborted');
  expect((await rejection(first.abortSession(key("nope"), marker))).code).toBe("not_found");
  await first.close();
  const second = SqliteStore.open(path);
  expect((await second.getSession(key("s0")))?.abort).toEqual(marker);
  expect((await second.getSession(key("s1")))?.abort).toBeUndefined();
  expect((await second.listSessions()).find((row) => row.id === "s0")?.abort).toEqual(marker);
  expect(await second.head(key("s0"))).toBe(0);
  await second.close();
});

test("a v6 file is migrated: its sessions read unaborted and can be aborted", async () => {
  const path = tempDb();
  const store = SqliteStore.open(path);
  await store.createSession(record("old"));
  await store.close();
  const db = new Database(path);
  db.exec(
    "ALTER TABLE sessions DROP COLUMN aborted_at; ALTER TABLE sessions DROP COLUMN abort_reason; ALTER TABLE sessions DROP COLUMN aborted_by; PRAGMA user_version = 6",
  );
  db.close();
  const migrated = SqliteStore.open(path);
  expect(SCHEMA_VERSION).toBe(7);
  expect((await migrated.getSession(key("old")))?.abort).toBeUndefined();
  await migrated.abortSession(key("old"), marker);
  expect((await migrated.getSession(key("old")))?.abort).toEqual(marker);
  await migrated.close();
});
