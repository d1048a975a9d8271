/**
 * The occurrence store (`--store`): every routed signal is a row with its route and session
 * (filtered signals are not stored), rows survive a reopen, rows past --store-ttl are pruned, the
 * size bound drops the oldest rows first and shrinks the file, a failed write drops and counts.
 */
import { describe, expect, test } from "bun:test";
import { statSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "../../../src/telemetry/logger.ts";
import type { OccurrenceRow } from "../../../src/watcher/core/occurrence.ts";
import { DEFAULT_REASONS } from "../../../src/watcher/core/reasons.ts";
import type { Signal } from "../../../src/watcher/core/signal.ts";
import { Dispatcher } from "../../../src/watcher/dispatcher.ts";
import { OccurrenceStore } from "../../../src/watcher/occurrence-store.ts";
import { WatcherMetrics } from "../../../src/watcher/watcher-metrics.ts";
import { tempDir } from "../../support/daemon.ts";

const HOUR = 3_600_000;

function row(index: number, at: number): OccurrenceRow {
  return {
    at,
    route: "injected",
    kind: "cluster-event",
    severity: "critical",
    reason: "BackOff",
    namespace: "shop",
    kindOfObject: "Pod",
    name: `web-${index}`,
    uid: `uid-${index}`,
    cluster: "prod",
    workload: "Deployment/web",
    sessionId: `sess-${index}`,
  };
}

describe("occurrence store", () => {
  test("rows are written in batches, survive a reopen, and count by route", () => {
    const path = join(tempDir(), "nested", "store.db");
    const metrics = new WatcherMetrics("prod");
    const store = new OccurrenceStore({ path, maxBytes: 64 << 20, ttlMs: HOUR, metrics, batch: 10 });
    for (let i = 0; i < 25; i++) store.record(row(i, 1000 + i));
    expect(metrics.render()).toContain('watcher_store_records_total{cluster="prod",route="injected"} 20');
    store.close();
    const reopened = new OccurrenceStore({ path, maxBytes: 64 << 20, ttlMs: HOUR });
    expect(reopened.count()).toBe(25);
    expect(reopened.rows(1)[0]).toEqual(row(0, 1000));
    reopened.close();
  });

  test("--store-ttl: rows older than the TTL are pruned, newer ones kept", () => {
    let now = 10 * HOUR;
    const metrics = new WatcherMetrics("prod");
    const store = new OccurrenceStore({
      path: join(tempDir(), "ttl.db"),
      maxBytes: 64 << 20,
      ttlMs: 2 * HOUR,
      metrics,
      now: () => now,
    });
    store.record(row(1, 7 * HOUR));
    store.record(row(2, 9 * HOUR));
    store.record(row(3, 10 * HOUR));
    expect(store.prune()).toEqual({ ttl: 1, size: 0 });
    expect(store.rows().map((kept) => kept.name)).toEqual(["web-2", "web-3"]);
    now = 12 * HOUR;
    expect(store.prune().ttl).toBe(1);
    expect(metrics.render()).toContain('watcher_store_pruned_rows_total{cause="ttl",cluster="prod"} 2');
    store.close();
  });

  test("--store-max-mb: every flush keeps the store within the bound, the oldest rows going first, and the file stays small (D427)", () => {
    const path = join(tempDir(), "size.db");
    const metrics = new WatcherMetrics("prod");
    const store = new OccurrenceStore({
      path,
      maxBytes: 256 * 1024,
      ttlMs: 1000 * HOUR,
      metrics,
      batch: 1000,
      now: () => 0,
    });
    let most = 0;
    for (let i = 0; i < 20_000; i++) {
      store.record({ ...row(i, 0), name: `web-${i}-${"x".repeat(40)}` });
      // Every batch of 1000 flushes; the bound holds after each, not only at the prune tick.
      if (i % 1000 === 999) most = Math.max(most, store.usedBytes());
    }
    store.flush();
    expect(most).toBeLessThanOrEqual(256 * 1024);
    const kept = store.rows(1)[0];
    const dropped = Number(kept?.uid.slice(4));
    expect(dropped).toBeGreaterThan(10_000);
    expect(store.count()).toBe(20_000 - dropped);
    store.close();
    expect(statSync(path).size).toBeLessThanOrEqual(256 * 1024 + 64 * 1024);
    expect(metrics.render()).toContain(`watcher_store_pruned_rows_total{cause="size",cluster="prod"} ${dropped}`);
  });

  test("payloads spilled into the same file do not count against --store-max-mb: the rows and the store's memory stay (D454)", () => {
    const path = join(tempDir(), "spilled.db");
    const store = new OccurrenceStore({ path, maxBytes: 256 * 1024, ttlMs: 1000 * HOUR, batch: 1000, now: () => 0 });
    for (let i = 0; i < 100; i++) store.record(row(i, 0));
    store.flush();
    // An outage: far more owed payloads than the store's bound, waiting in the spill.
    for (let i = 0; i < 1000; i++)
      store.spill.push({
        id: `p-${i}`,
        sessionId: `sess-${i}`,
        payload: { pad: "x".repeat(2000) },
        queuedAt: 0,
        attempts: 0,
      });
    for (let i = 100; i < 110; i++) store.record(row(i, 0));
    store.flush();
    expect(store.count()).toBe(110);
    expect(store.usedBytes()).toBeLessThanOrEqual(256 * 1024);
    // The spill drains: still nothing pruned, and a reopen measures the spill again.
    for (let i = 0; i < 500; i++) store.spill.forget(store.spill.oldest()?.seq ?? -1);
    store.close();
    const reopened = new OccurrenceStore({ path, maxBytes: 256 * 1024, ttlMs: 1000 * HOUR, now: () => 0 });
    reopened.record(row(200, 0));
    reopened.flush();
    expect(reopened.count()).toBe(111);
    expect(reopened.spill.size).toBe(500);
    reopened.close();
  });

  test("a failed write drops the batch and counts it", () => {
    const metrics = new WatcherMetrics("prod");
    const store = new OccurrenceStore({
      path: join(tempDir(), "drop.db"),
      maxBytes: 64 << 20,
      ttlMs: HOUR,
      metrics,
      batch: 2,
    });
    // the database closed under the store: every flush fails
    (store as unknown as { db: { close(): void } }).db.close();
    for (let i = 0; i < 10; i++) store.record(row(i, 0));
    const text = metrics.render();
    expect(text).toContain('watcher_store_write_drops_total{cause="write_error",cluster="prod"} 10');
    expect(text).not.toContain("watcher_store_records_total{");
  });
});

describe("the dispatcher writes every routed signal", () => {
  test("opened → injected with its session, deduped → suppressed, filtered → not stored, resolved → resolved", async () => {
    let clock = Date.parse("2026-07-24T10:00:00Z");
    const rows: OccurrenceRow[] = [];
    let sessions = 0;
    const sink = {
      name: "test",
      open: async () => ({ id: `sess-${++sessions}` }),
      append: async () => ({ ok: true as const }),
    };
    const dispatcher = new Dispatcher(
      {
        cluster: "prod",
        zone: "",
        mode: "per-incident",
        filter: {
          reasons: new Set(DEFAULT_REASONS),
          allowNamespaces: new Set(),
          excludeNamespaces: new Set(),
          backoffMinCount: 1,
          imagePullTransientMinCount: 3,
          unhealthyMinCount: 3,
        },
        dedupWindowMs: 300_000,
        recoveryStableForMs: 60_000,
        enrichSeverities: new Set(),
        injectMaxBytes: 8192,
        severityOverrides: new Map(),
      },
      {
        sink,
        logger: createLogger("error", () => {}),
        metrics: new WatcherMetrics("prod"),
        now: () => clock,
        record: (entry) => rows.push(entry),
        clearance: () => ({ cleared: true, stableSince: clock - 120_000 }),
      },
    );
    const signal: Signal = {
      kind: "cluster-event",
      reason: "BackOff",
      namespace: "shop",
      kindOfObject: "Pod",
      name: "web-1",
      uid: "uid-1",
      message: "Back-off restarting failed container",
      eventCount: 3,
      firstSeen: clock - 300_000,
      lastSeen: clock,
      type: "Warning",
      severity: "critical",
    };
    await dispatcher.dispatch(signal);
    clock += 1000;
    await dispatcher.dispatch({ ...signal, lastSeen: clock });
    await dispatcher.dispatch({ ...signal, reason: "Pulled", uid: "uid-2" });
    await dispatcher.sweepRecovery();
    expect(rows.map((entry) => `${entry.route}:${entry.name}:${entry.sessionId ?? "-"}`)).toEqual([
      "injected:web-1:sess-1",
      "suppressed:web-1:sess-1",
      "resolved:web-1:sess-1",
    ]);
    expect(rows[0]).toMatchObject({ cluster: "prod", reason: "BackOff", uid: "uid-1", severity: "critical" });
  });
});
