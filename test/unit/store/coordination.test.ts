/**
 * Daemon coordination in the sqlite store: interruption claims (one holder until expiry, the
 * holder may renew, another owner takes an expired claim) and boot records for the crash-loop
 * breaker (unclean runs counted within the window; an orderly stop is not counted).
 */
import { afterAll, expect, test } from "bun:test";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.ts";
import { cleanupTempDirs, key, tempDb } from "./sqlite-helpers.ts";

afterAll(cleanupTempDirs);

const at = (ms: number) => new Date(Date.UTC(2026, 10, 22, 0, 0, 0) + ms).toISOString();
const claim = (owner: string, nowMs: number) => ({
  interruption: "e-1",
  owner,
  now: at(nowMs),
  expiresAt: at(nowMs + 600_000),
});

test("an interruption claim has one holder until it expires", async () => {
  const path = tempDb();
  const store = SqliteStore.open(path);
  expect(await store.claimInterruption(key("s"), claim("daemon-a", 0))).toBe(true);
  expect(await store.claimInterruption(key("s"), claim("daemon-b", 1000))).toBe(false);
  expect(await store.claimInterruption(key("s"), claim("daemon-a", 2000))).toBe(true);
  expect(await store.claimInterruption(key("other"), claim("daemon-b", 2000))).toBe(true);
  expect(await store.claimInterruption(key("s"), { ...claim("daemon-b", 0), interruption: "e-2" })).toBe(true);
  await store.close();
  const reopened = SqliteStore.open(path);
  expect(await reopened.claimInterruption(key("s"), claim("daemon-b", 600_000))).toBe(false);
  expect(await reopened.claimInterruption(key("s"), claim("daemon-b", 602_001))).toBe(true);
  expect(await reopened.claimInterruption(key("s"), claim("daemon-a", 603_000))).toBe(false);
  await reopened.close();
});

test("boot records: unclean runs in the window are counted, orderly stops and old runs are not", async () => {
  const store = SqliteStore.open(tempDb());
  expect(await store.beginBoot("b1", at(0), at(-600_000))).toBe(0);
  expect(await store.beginBoot("b2", at(1000), at(-599_000))).toBe(1);
  await store.endBoot("b2");
  expect(await store.beginBoot("b3", at(2000), at(-598_000))).toBe(1);
  expect(await store.beginBoot("b4", at(700_000), at(100_000))).toBe(0);
  await store.close();
});
