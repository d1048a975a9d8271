/**
 * WAL checkpoints off the main thread (checkpointer.ts, checkpoint-worker.ts): the worker keeps the
 * WAL bounded while appends run, writes are held (never refused) while the WAL restarts, a
 * momentarily busy database delays writes without blocking the event loop, close stops the worker
 * and leaves the data intact, a worker that cannot start falls back to SQLite's own checkpoints,
 * and the group-commit queue parks, resumes and retries around holds and busy moments.
 */
import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { checkpointerUrl } from "../../../src/store/sqlite/checkpointer.ts";
import { GroupCommit } from "../../../src/store/sqlite/group-commit.ts";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.ts";
import { waitFor } from "../../support/daemon.ts";
import { audit, cleanupTempDirs, key, record, rejection, tempDb } from "./sqlite-helpers.ts";

afterAll(cleanupTempDirs);

const HOLDER = join(import.meta.dir, "../../fixtures/sqlite-store-holder.ts");
const KiB = 1024;

function walSize(path: string): number {
  return statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0;
}

async function until(condition: () => boolean, ms = 5000): Promise<void> {
  await waitFor(() => (condition() ? true : undefined), ms);
}

describe("WAL bounded by the checkpointer worker", () => {
  test("appends from many sessions keep the -wal file under the limit, nothing is refused, every row is there after reopen", async () => {
    const path = tempDb();
    const limit = 512 * KiB;
    const store = SqliteStore.open(path, {
      checkpoint: { pollMs: 5, walTargetBytes: 128 * KiB, walLimitBytes: limit },
      mergeThresholdRows: 128,
      mergeSliceRows: 16,
    });
    const sessions = 8;
    const rounds = 500;
    await Promise.all(Array.from({ length: sessions }, (_, i) => store.createSession(record(`w${i}`))));
    await until(() => store.stats.checkpointer === "running");
    let largest = 0;
    await Promise.all(
      Array.from({ length: sessions }, async (_, i) => {
        for (let n = 0; n < rounds; n++) {
          await store.append(key(`w${i}`), [audit(`w${i}:${n + 1}`, 300)]);
          largest = Math.max(largest, walSize(path));
          // Reads run between commits, checkpoints and holds, and never fail.
          const tail = await store.read(key(`w${i}`), Math.max(0, n - 2), 10);
          expect(tail.at(-1)?.seq).toBe(n + 1);
        }
      }),
    );
    const stats = store.stats;
    // Many times the limit went through the WAL (journal rows, then merges, which rewrite
    // clustered pages), yet it stayed bounded: holds start between transactions, and the file
    // size shows WAL content only past the limit, so one more transaction (a group commit of at
    // most 8 rows, or a merge slice of 16) may land past it.
    expect(stats.rows).toBe(sessions * rounds);
    expect(stats.refused).toBe(0);
    expect(stats.checkpoints).toBeGreaterThan(0);
    // Each hold restarted the WAL: several times the soft target went through it.
    expect(stats.walHolds).toBeGreaterThanOrEqual(5);
    expect(stats.walHoldTimeouts).toBe(0);
    expect(stats.walRestartFailures).toBe(0);
    expect(largest).toBeLessThan(limit + 384 * KiB);
    expect(stats.maxWalBytes).toBeLessThan(limit + 384 * KiB);
    await store.close();
    // Close checkpoints and truncates the WAL.
    expect(walSize(path)).toBe(0);

    const reopened = SqliteStore.open(path);
    for (let i = 0; i < sessions; i++) {
      const rows = await reopened.read(key(`w${i}`), 0, rounds + 1);
      expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: rounds }, (_, n) => n + 1));
      expect(rows.map((r) => (r.event as { name: string }).name)).toEqual(
        Array.from({ length: rounds }, (_, n) => `w${i}:${n + 1}`),
      );
    }
    await reopened.close();
  });

  test("an idle store gets its WAL checkpointed by the worker, without any further write", async () => {
    const path = tempDb();
    const store = SqliteStore.open(path, { checkpoint: { pollMs: 5 } });
    await store.createSession(record("idle"));
    await until(() => store.stats.checkpointer === "running");
    const before = store.stats.checkpoints;
    await store.append(key("idle"), [audit("one")]);
    await until(() => store.stats.checkpoints > before);
    await store.close();
  });

  test("a WAL the store restarted and refilled to the same length is still seen as new and checkpointed", async () => {
    const path = tempDb();
    // No merges: their writes would show the worker new frames and hide a missed restart.
    const store = SqliteStore.open(path, {
      checkpoint: { pollMs: 5, idlePollMs: 5 },
      mergeThresholdRows: Number.MAX_SAFE_INTEGER,
      mergeIdleMs: false,
    });
    await store.createSession(record("same"));
    await until(() => store.stats.checkpointer === "running");
    // Equal appends, each after the worker checkpointed the last: each commit finds the WAL fully
    // checkpointed, restarts it and writes the same number of frames as before.
    for (let n = 1; n <= 6; n++) {
      const before = store.stats.checkpoints;
      await store.append(key("same"), [audit(`same:${n}`, 100)]);
      await until(() => store.stats.checkpoints > before, 3000);
    }
    await store.close();
  });

  test("close while writes are held commits what queued; later calls are refused; the data reopens", async () => {
    const path = tempDb();
    const store = SqliteStore.open(path, {
      checkpoint: { pollMs: 5, walTargetBytes: 16 * KiB, walLimitBytes: 64 * KiB },
    });
    await store.createSession(record("h"));
    await until(() => store.stats.checkpointer === "running");
    const settled: Promise<unknown>[] = [];
    // Append until a hold is in progress, then close with appends still queued behind it.
    for (let n = 0; n < 10_000 && store.stats.walHolds === 0; n++) {
      settled.push(store.append(key("h"), [audit(`h:${n + 1}`, 500)]));
      if (n % 20 === 19) await Promise.resolve();
    }
    settled.push(store.append(key("h"), [audit("last", 500)]));
    const closing = store.close();
    const outcomes = await Promise.allSettled(settled);
    await closing;
    expect(outcomes.every((o) => o.status === "fulfilled")).toBe(true);
    await expect(store.append(key("h"), [audit("late")])).rejects.toThrow(/is closed/);
    const reopened = SqliteStore.open(path);
    expect(await reopened.head(key("h"))).toBe(settled.length);
    await reopened.close();
  });
});

describe("a busy database never blocks the writer", () => {
  test("while another connection holds the write lock, writes wait off the event loop, then commit", async () => {
    const path = tempDb();
    const store = SqliteStore.open(path);
    await store.createSession(record("b"));
    const other = new Database(path);
    other.exec("BEGIN IMMEDIATE");
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 1);
    const pending = Promise.all([store.append(key("b"), [audit("b1")]), store.append(key("b"), [audit("b2")])]);
    await until(() => store.stats.busyRetries > 0);
    expect(store.stats.busyRetries).toBeGreaterThan(0);
    // The event loop keeps turning while the writes wait on the lock (a blocked loop never gets here).
    const waiting = ticks;
    await until(() => ticks >= waiting + 5);
    expect(await store.head(key("b"))).toBe(0);
    other.exec("COMMIT");
    other.close();
    const rows = await pending;
    clearInterval(ticker);
    expect(rows.flat().map((r) => r.seq)).toEqual([1, 2]);
    expect(store.stats.refused).toBe(0);
    await store.close();
  });

  test("a write lock held for over a second: the writes are refused as before, not hung", async () => {
    const path = tempDb();
    const store = SqliteStore.open(path);
    await store.createSession(record("b"));
    const other = new Database(path);
    other.exec("BEGIN IMMEDIATE");
    const started = performance.now();
    const failure = await rejection(store.append(key("b"), [audit("b1")]));
    expect(performance.now() - started).toBeLessThan(3000);
    other.exec("ROLLBACK");
    other.close();
    expect(failure.code).toBe("unavailable");
    expect(failure.message).toMatch(/^session store refused the write: database is locked/);
    expect(store.stats.refused).toBe(1);
    expect((await store.append(key("b"), [audit("b2")])).map((r) => r.seq)).toEqual([1]);
    await store.close();
  });
});

describe("worker lifecycle", () => {
  test("close stops the worker thread; the process then exits by itself", async () => {
    const child = Bun.spawn([process.execPath, HOLDER, "close", tempDb()], { stdout: "pipe", stderr: "inherit" });
    const exited = await Promise.race([
      child.exited,
      // Deadline: a child still running by then is killed and fails the test.
      new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), 10_000)),
    ]);
    if (exited === "timeout") child.kill("SIGKILL");
    expect(exited).toBe(0);
    const report = JSON.parse((await new Response(child.stdout).text()).trim()) as {
      open: { state: string; threads: number; head: number };
      closed: { state: string; threads: number };
    };
    expect(report.open.state).toBe("running");
    expect(report.closed.state).toBe("stopped");
    if (report.open.threads >= 0) {
      expect(report.open.threads).toBe(1);
      expect(report.closed.threads).toBe(0);
    }
  });

  test("a process that never closes its store still exits (the worker does not keep it alive)", async () => {
    const path = tempDb();
    const child = Bun.spawn([process.execPath, HOLDER, "leave", path], { stdout: "pipe", stderr: "inherit" });
    const exited = await Promise.race([
      child.exited,
      // Deadline: a child still running by then is killed and fails the test.
      new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), 10_000)),
    ]);
    if (exited === "timeout") child.kill("SIGKILL");
    expect(exited).toBe(0);
    expect(await new Response(child.stdout).text()).toContain("appended");
    const store = SqliteStore.open(path);
    expect(await store.head(key("left"))).toBe(20);
    await store.close();
  });

  test("a worker that cannot start: SQLite checkpoints inside commits again, writes keep working", async () => {
    const path = tempDb();
    const missing = new URL(`file://${join(tempDb(), "..", "no-such-worker.ts")}`);
    const store = SqliteStore.open(path, { checkpoint: { workerUrl: missing, walLimitBytes: 64 * KiB } });
    await store.createSession(record("f"));
    await until(() => store.stats.checkpointer === "failed");
    for (let n = 1; n <= 50; n++) expect((await store.append(key("f"), [audit(`f:${n}`, 2000)]))[0]?.seq).toBe(n);
    expect(store.stats.walHolds).toBe(0);
    await store.close();
    const reopened = SqliteStore.open(path);
    expect(await reopened.head(key("f"))).toBe(50);
    await reopened.close();
  });

  test("checkpoint: false runs no worker", async () => {
    const store = SqliteStore.open(tempDb(), { checkpoint: false });
    await store.createSession(record("off"));
    await store.append(key("off"), [audit("a")]);
    expect(store.stats.checkpointer).toBe("off");
    await store.close();
  });

  test("the worker URL names workers/store-checkpointer.ts, which exists (src/rpc/worker-urls.ts covers the binary)", () => {
    expect(checkpointerUrl().href.endsWith("/workers/store-checkpointer.ts")).toBe(true);
    expect(existsSync(new URL(checkpointerUrl()))).toBe(true);
  });
});

describe("group commit around write holds and busy moments", () => {
  type Op = { weight: number; n: number };

  test("a held queue parks, keeps order, and commits in row-budget batches after resume", async () => {
    let writable = false;
    const batches: number[][] = [];
    const queue = new GroupCommit<Op>((batch) => batches.push(batch.map((op) => op.n)) > 0, {
      flushOn: "microtask",
      maxBatchRows: 10,
      mayWrite: () => writable,
    });
    for (let n = 1; n <= 25; n++) queue.push({ weight: 1, n });
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([]);
    expect(queue.pending).toBe(25);
    writable = true;
    queue.resume();
    await until(() => queue.pending === 0, 1000);
    expect(batches.map((b) => b.length)).toEqual([10, 10, 5]);
    expect(batches.flat()).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
  });

  test("minIntervalMs: writes arriving one per tick share commits at most one per interval; the first is not held", async () => {
    const commits: { at: number; ns: number[] }[] = [];
    const queue = new GroupCommit<Op>(
      (batch) => commits.push({ at: performance.now(), ns: batch.map((op) => op.n) }) > 0,
      { flushOn: "immediate", maxBatchRows: 100, minIntervalMs: 40 },
    );
    const started = performance.now();
    queue.push({ weight: 1, n: 1 });
    await new Promise((resolve) => setImmediate(resolve));
    expect(commits.map((commit) => commit.ns)).toEqual([[1]]);
    expect((commits[0]?.at ?? Number.POSITIVE_INFINITY) - started).toBeLessThan(30);
    for (let n = 2; n <= 6; n++) {
      queue.push({ weight: 1, n });
      await new Promise((resolve) => setImmediate(resolve));
    }
    await until(() => queue.pending === 0, 1000);
    expect(commits.flatMap((commit) => commit.ns)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(commits.length).toBeLessThan(6);
    for (let index = 1; index < commits.length; index++)
      expect((commits[index]?.at ?? 0) - (commits[index - 1]?.at ?? 0)).toBeGreaterThanOrEqual(39);
  });

  test("flushAll commits everything at once, held or not", () => {
    const batches: number[][] = [];
    const queue = new GroupCommit<Op>((batch) => batches.push(batch.map((op) => op.n)) > 0, {
      flushOn: "microtask",
      maxBatchRows: 4,
      mayWrite: () => false,
    });
    for (let n = 1; n <= 9; n++) queue.push({ weight: 1, n });
    queue.flushAll();
    expect(queue.pending).toBe(0);
    expect(batches.flat()).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  test("a declined batch (database busy) is retried later, in order, without blocking the event loop", async () => {
    const attempts: { ns: number[]; mayDecline: boolean }[] = [];
    let declines = 2;
    const committed: number[] = [];
    const queue = new GroupCommit<Op>(
      (batch, mayDecline) => {
        attempts.push({ ns: batch.map((op) => op.n), mayDecline });
        if (mayDecline && declines > 0) {
          declines--;
          return false;
        }
        committed.push(...batch.map((op) => op.n));
        return true;
      },
      { flushOn: "microtask", maxBatchRows: 100 },
    );
    queue.push({ weight: 1, n: 1 });
    queue.push({ weight: 1, n: 2 });
    await Promise.resolve();
    // Declined once; while its retry is pending, new ops queue behind it.
    expect(committed).toEqual([]);
    queue.push({ weight: 1, n: 3 });
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 0);
    await until(() => queue.pending === 0, 1000);
    clearInterval(ticker);
    expect(committed).toEqual([1, 2, 3]);
    expect(attempts.map((a) => a.ns)).toEqual([
      [1, 2],
      [1, 2, 3],
      [1, 2, 3],
    ]);
    expect(attempts.every((a) => a.mayDecline)).toBe(true);
    expect(ticks).toBeGreaterThan(0);
  });

  test("a batch declined for a whole second may no longer be declined", async () => {
    const flags: boolean[] = [];
    const queue = new GroupCommit<Op>(
      (_batch, mayDecline) => {
        flags.push(mayDecline);
        return !mayDecline;
      },
      { flushOn: "microtask", maxBatchRows: 100 },
    );
    queue.push({ weight: 1, n: 1 });
    await until(() => queue.pending === 0, 3000);
    expect(flags.at(-1)).toBe(false);
    expect(flags.slice(0, -1).every((flag) => flag)).toBe(true);
  });
});
