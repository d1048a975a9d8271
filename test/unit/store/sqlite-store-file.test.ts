/**
 * SqliteStore and its file: the single-daemon lock across processes (D18: an OS lock on the
 * sidecar `<store>.lock`), refusal of foreign, corrupt and newer files without touching them, and
 * real SQLite write refusals (SQLITE_FULL).
 */
import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SparError } from "../../../src/core/errors.ts";
import { SCHEMA_VERSION } from "../../../src/store/sqlite/migrations.ts";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.ts";
import { audit, cleanupTempDirs, key, record, rejection, tempDb, tempDir } from "./sqlite-helpers.ts";

afterAll(cleanupTempDirs);

const HOLDER = join(import.meta.dir, "../../fixtures/sqlite-store-holder.ts");
const IN_USE =
  /session store .* is in use by another spar daemon \(one daemon per sqlite file\); stop it or choose another --session-db/;

interface TryResult {
  ok: boolean;
  code?: string;
  message?: string;
  ms: number;
}

async function tryInChild(path: string): Promise<TryResult> {
  const child = Bun.spawn([process.execPath, HOLDER, "try", path], { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(child.stdout).text();
  await child.exited;
  return JSON.parse(out.trim()) as TryResult;
}

async function holdInChild(path: string): Promise<Bun.Subprocess<"ignore", "pipe", "inherit">> {
  const child = Bun.spawn([process.execPath, HOLDER, "hold", path], { stdout: "pipe", stderr: "inherit" });
  const reader = child.stdout.getReader();
  let seen = "";
  while (!seen.includes("ready")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`holder exited before ready: ${seen}`);
    seen += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return child;
}

function openError(path: string): SparError {
  try {
    SqliteStore.open(path).close();
  } catch (error) {
    if (error instanceof SparError) return error;
    throw error;
  }
  throw new Error(`expected ${path} to be refused`);
}

function sha256(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

describe("single-daemon lock", () => {
  test("a second process is refused while the store is open, and opens after close", async () => {
    const path = tempDb();
    const store = SqliteStore.open(path);
    await store.createSession(record("s0"));
    const refused = await tryInChild(path);
    expect(refused.ok).toBe(false);
    expect(refused.code).toBe("unavailable");
    expect(refused.message).toMatch(IN_USE);
    expect(refused.message).toContain(path);
    expect(refused.ms).toBeLessThan(1000);
    await store.close();
    expect((await tryInChild(path)).ok).toBe(true);
  });

  test("a store held by a process is refused here; SIGKILL releases it and nothing committed is lost", async () => {
    const path = tempDb();
    const child = await holdInChild(path);
    try {
      const error = openError(path);
      expect(error.code).toBe("unavailable");
      expect(error.message).toMatch(IN_USE);
    } finally {
      child.kill("SIGKILL");
      await child.exited;
    }
    // The killed daemon's lock file is still there; only its OS lock died with it.
    expect(existsSync(`${path}.lock`)).toBe(true);
    const store = SqliteStore.open(path);
    expect(await store.head(key("held"))).toBe(1);
    expect((await store.read(key("held"), 0, 10))[0]?.event.author).toBe("holder");
    await store.close();
  });

  test("a leftover lock file does not block opening; it stays in place after close", async () => {
    const path = tempDb();
    writeFileSync(`${path}.lock`, "");
    const store = SqliteStore.open(path);
    await store.createSession(record("s0"));
    expect((await tryInChild(path)).message).toMatch(IN_USE);
    await store.close();
    expect(existsSync(`${path}.lock`)).toBe(true);
    const again = SqliteStore.open(path);
    expect((await again.getSession(key("s0")))?.owner).toBe("local");
    await again.close();
  });

  test("a second open in the same process is refused and leaves the first one holding the lock", async () => {
    const path = tempDb();
    const store = SqliteStore.open(path);
    await store.createSession(record("s0"));
    const error = openError(path);
    expect(error.code).toBe("unavailable");
    expect(error.message).toMatch(IN_USE);
    expect((await tryInChild(path)).message).toMatch(IN_USE);
    await store.append(key("s0"), [audit("still-writing")]);
    expect(await store.head(key("s0"))).toBe(1);
    await store.close();
  });

  test("the store file itself is not locked exclusively: another connection can read it while open", async () => {
    const path = tempDb();
    const store = SqliteStore.open(path);
    await store.createSession(record("s0"));
    const reader = new Database(path, { readonly: true });
    expect(reader.query("SELECT sid FROM sessions").all()).toEqual([{ sid: "s0" }]);
    reader.close();
    await store.close();
  });

  test("a lock file that is not SQLite is refused, named, and left as it was", () => {
    const path = tempDb();
    const lock = `${path}.lock`;
    writeFileSync(lock, randomBytes(4096));
    const before = sha256(lock);
    const error = openError(path);
    expect(error.code).toBe("unavailable");
    expect(error.message).toContain(lock);
    expect(error.message).toContain("is not a SQLite file");
    expect(sha256(lock)).toBe(before);
    expect(existsSync(path)).toBe(false);
  });
});

describe("foreign and corrupt files", () => {
  function expectRefusedUntouched(path: string): void {
    const before = sha256(path);
    const error = openError(path);
    expect(error.code).toBe("unavailable");
    expect(error.message).toContain(path);
    expect(error.message).toContain("is not a spar session store");
    expect(sha256(path)).toBe(before);
    expect(existsSync(`${path}-wal`)).toBe(false);
    // The lock file this open created is removed again: nothing is left beside a foreign file.
    expect(existsSync(`${path}.lock`)).toBe(false);
  }

  test("random bytes", () => {
    const path = join(tempDir(), "random.db");
    writeFileSync(path, randomBytes(8192));
    expectRefusedUntouched(path);
  });

  test("SQLite magic followed by garbage", () => {
    const path = join(tempDir(), "corrupt.db");
    writeFileSync(path, Buffer.concat([Buffer.from("SQLite format 3\0", "latin1"), randomBytes(8176)]));
    expectRefusedUntouched(path);
  });

  test("a sqlite database with a foreign table (rollback journal and WAL)", () => {
    for (const journal of ["DELETE", "WAL"]) {
      const path = join(tempDir(), `foreign-${journal}.db`);
      const db = new Database(path, { create: true });
      db.exec(`PRAGMA journal_mode = ${journal}`);
      db.exec("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)");
      db.exec("INSERT INTO customers (name) VALUES ('ada')");
      db.close();
      expectRefusedUntouched(path);
    }
  });

  test("a foreign table that lives only in an un-checkpointed WAL", () => {
    const path = join(tempDir(), "foreign-live-wal.db");
    const db = new Database(path, { create: true });
    db.exec("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0");
    db.exec("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)");
    try {
      expect(statSync(`${path}-wal`).size).toBeGreaterThan(0);
      const before = sha256(path);
      const error = openError(path);
      expect(error.message).toContain("is not a spar session store");
      expect(sha256(path)).toBe(before);
    } finally {
      db.close();
    }
  });

  test("a sqlite database with no tables is adopted and stamped", async () => {
    const path = join(tempDir(), "empty.db");
    const db = new Database(path, { create: true });
    db.exec("PRAGMA user_version = 0; VACUUM");
    db.close();
    expect(statSync(path).size).toBeGreaterThan(0);
    const store = SqliteStore.open(path);
    await store.createSession(record("s0"));
    await store.close();
    const check = new Database(path, { readonly: true });
    expect(check.query("PRAGMA application_id").get()).toEqual({ application_id: 0x53504152 });
    check.close();
  });

  test("a store from a newer spar is refused with a clear message", async () => {
    const path = tempDb();
    await SqliteStore.open(path).close();
    const db = new Database(path);
    db.exec("PRAGMA user_version = 99");
    db.close();
    const before = sha256(path);
    const error = openError(path);
    expect(error.message).toContain(
      `schema version 99, newer than this build's ${SCHEMA_VERSION}; upgrade spar or choose another --session-db`,
    );
    expect(sha256(path)).toBe(before);
  });

  test("a missing directory fails with a message naming the path", () => {
    const path = join(tempDir(), "no", "such", "dir.db");
    const error = openError(path);
    expect(error.code).toBe("unavailable");
    expect(error.message).toContain(path);
  });
});

describe("refused writes (real SQLITE_FULL via max_page_count)", () => {
  test("the whole batch is rejected, nothing half-written, heads and inbox intact, reads still work", async () => {
    const path = tempDb();
    // Caps the file at its size after migration (the cap cannot go below the current size).
    const store = SqliteStore.open(path, { maxPageCount: 1 });
    await Promise.all([store.createSession(record("a")), store.createSession(record("b"))]);
    await store.append(key("a"), [audit("small-1")]);
    await store.enqueueInbox(key("b"), { promptId: "p1", message: "m", queuedAt: "t", wake: true });
    const refusedBefore = store.stats.refused;

    const big = Array.from({ length: 4 }, (_, i) => audit(`big-${i}`, 20_000));
    const batch = await Promise.allSettled([
      store.append(key("a"), [audit("small-2")]),
      store.append(key("b"), big, { drainedPromptIds: ["p1"] }),
      store.touchSession(key("a"), "2026-03-03T00:00:00Z"),
    ]);
    for (const outcome of batch) {
      expect(outcome.status).toBe("rejected");
      const reason = (outcome as PromiseRejectedResult).reason as SparError;
      expect(reason.code).toBe("unavailable");
      expect(reason.message).toMatch(/^session store refused the write: .*full/);
    }
    expect(store.stats.refused - refusedBefore).toBe(1);

    expect(await store.head(key("a"))).toBe(1);
    expect(await store.head(key("b"))).toBe(0);
    expect((await store.read(key("a"), 0, 10)).map((r) => r.seq)).toEqual([1]);
    expect(await store.read(key("b"), 0, 10)).toEqual([]);
    expect((await store.pendingInbox(key("b"))).map((i) => i.promptId)).toEqual(["p1"]);
    expect((await store.getSession(key("a")))?.lastTouchedAt).toBe("0001-01-01T00:00:00Z");
    await store.probe();

    // A write that fits still lands, with the next contiguous seq.
    expect((await store.append(key("a"), [audit("small-3")])).map((r) => r.seq)).toEqual([2]);
    await store.close();

    const reopened = SqliteStore.open(path);
    expect((await reopened.read(key("a"), 0, 10)).map((r) => r.seq)).toEqual([1, 2]);
    expect(await reopened.head(key("b"))).toBe(0);
    await reopened.close();
  });

  test("a refused create leaves no session behind", async () => {
    const store = SqliteStore.open(tempDb(), { maxPageCount: 1 });
    const huge = { ...record("x"), viewers: Array.from({ length: 2000 }, (_, i) => `viewer-${i}`) };
    expect((await rejection(store.createSession(huge))).code).toBe("unavailable");
    expect(await store.getSession(key("x"))).toBeUndefined();
    expect((await rejection(store.append(key("x"), [audit("a")]))).code).toBe("not_found");
    await store.createSession(record("x"));
    expect((await store.append(key("x"), [audit("a")])).map((r) => r.seq)).toEqual([1]);
    await store.close();
  });
});
