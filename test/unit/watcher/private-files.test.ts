/**
 * The watcher's state files are owner-only (issue 13 item 4): a new directory is 0700, the dedup
 * file, the occurrence store with its -wal and -shm, and the pending-inject journal are 0600, an
 * existing world-readable store is narrowed when opened, and a pruned occurrence's text does not
 * stay in the store file (secure_delete).
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { DedupCache } from "../../../src/watcher/core/dedup-cache.ts";
import { saveDedupFile } from "../../../src/watcher/dedup-file.ts";
import { OccurrenceStore } from "../../../src/watcher/occurrence-store.ts";
import { PendingInjects } from "../../../src/watcher/pending-injects.ts";
import { tempDir } from "../../support/daemon.ts";

const mode = (path: string) => statSync(path).mode & 0o777;
const HOUR = 3_600_000;

function occurrence(name: string, at: number) {
  return {
    at,
    route: "injected" as const,
    kind: "cluster-event",
    severity: "critical",
    reason: "BackOff",
    namespace: "shop",
    kindOfObject: "Pod",
    name,
    uid: `uid-${name}`,
    cluster: "prod",
    sessionId: "sess-1",
  };
}

describe("owner-only state files", () => {
  test("the dedup file and its new directory", () => {
    const path = join(tempDir(), "state", "deeper", "dedup.json");
    const cache = new DedupCache(300_000);
    cache.observe("uid-1|CrashLoopBackOff", 1000, 1000);
    saveDedupFile(path, cache);
    expect(mode(path)).toBe(0o600);
    expect(mode(dirname(path))).toBe(0o700);
    expect(mode(dirname(dirname(path)))).toBe(0o700);
  });

  test("the occurrence store, its -wal and -shm, a new directory; an existing 0644 store is narrowed", () => {
    const path = join(tempDir(), "store", "occurrences.db");
    const store = new OccurrenceStore({ path, maxBytes: 1 << 20, ttlMs: HOUR });
    store.record(occurrence("web-1", Date.now()));
    store.flush();
    for (const file of [path, `${path}-wal`, `${path}-shm`]) expect([file, mode(file)]).toEqual([file, 0o600]);
    expect(mode(dirname(path))).toBe(0o700);
    store.close();
    chmodSync(path, 0o644);
    const reopened = new OccurrenceStore({ path, maxBytes: 1 << 20, ttlMs: HOUR });
    expect(mode(path)).toBe(0o600);
    reopened.close();
  });

  test("a pruned occurrence's text does not stay in the store file", () => {
    const path = join(tempDir(), "occurrences.db");
    let now = 10 * HOUR;
    const store = new OccurrenceStore({ path, maxBytes: 64 << 20, ttlMs: HOUR, now: () => now });
    store.record(occurrence("secret-marker-7f3a9c", now));
    store.record(occurrence("kept-row", now + 2 * HOUR));
    store.flush();
    now += 2 * HOUR;
    expect(store.prune().ttl).toBe(1);
    store.close();
    const bytes = readFileSync(path).toString("latin1");
    expect(bytes).toContain("kept-row");
    expect(bytes).not.toContain("secret-marker-7f3a9c");
  });

  test("the pending-inject journal", () => {
    const path = join(tempDir(), "new-dir", "dedup.json.pending");
    const journal = new PendingInjects(
      path,
      createLogger("error", () => {}),
    );
    journal.put({ id: "p-1", sessionId: "sess-1", payload: { kind: "cluster-event" }, queuedAt: 1, attempts: 1 });
    expect(mode(path)).toBe(0o600);
    expect(mode(dirname(path))).toBe(0o700);
    journal.close();
  });
});
