/**
 * The abort marker on a session's row (schema v7) in a migrated file: a v6 file's sessions read
 * unaborted and can be aborted. The marker's contract on every store is in store-contract.ts.
 */
import { Database } from "bun:sqlite";
import { afterAll, expect, test } from "bun:test";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.ts";
import { SCHEMA_VERSION } from "../../../src/store/sqlite/migrations.ts";
import { cleanupTempDirs, key, record, tempDb } from "./sqlite-helpers.ts";

afterAll(cleanupTempDirs);

const marker = { reason: "bad rollout", at: "2026-08-16T09:00:00.000Z", by: "svc-inject" };

test("a v6 file is migrated: its sessions read unaborted and can be aborted", async () => {
  const path = tempDb();
  const store = SqliteStore.open(path);
  await store.createSession(record("old"));
  await store.close();
  const db = new Database(path);
  db.exec(
    "ALTER TABLE inbox DROP COLUMN trace_context; ALTER TABLE sessions DROP COLUMN aborted_at; ALTER TABLE sessions DROP COLUMN abort_reason; ALTER TABLE sessions DROP COLUMN aborted_by; PRAGMA user_version = 6",
  );
  db.close();
  const migrated = SqliteStore.open(path);
  expect(SCHEMA_VERSION).toBe(8);
  expect((await migrated.getSession(key("old")))?.abort).toBeUndefined();
  await migrated.abortSession(key("old"), marker);
  expect((await migrated.getSession(key("old")))?.abort).toEqual(marker);
  await migrated.close();
});
