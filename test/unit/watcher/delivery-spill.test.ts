/**
 * The delivery queue's spill (D451) on a real sqlite file: past the window, payloads wait in the
 * spill and come back oldest first, one first-in first-out line across window and spill (a
 * session's payloads in order too); `owes` and `hasOpen` see spilled payloads; a restart finds
 * the window in the journal and the rest in the spill, in order; a crash between journaling a
 * refilled payload and forgetting its row re-reads it under one id (not twice); the queue with
 * a spill loses nothing past its window while the sink is down, and without one the window's
 * bound still drops the oldest (counted); a spill that cannot write (disk full) costs the payload,
 * counted, never the caller a throw.
 */
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createLogger } from "../../../src/telemetry/logger.ts";
import type { AppendResult, IncidentSink, OpenBinding, OpenResult } from "../../../src/watcher/core/sink.ts";
import { DeliveryQueue } from "../../../src/watcher/delivery-queue.ts";
import { DeliverySpill } from "../../../src/watcher/delivery-spill.ts";
import { type PendingInject, PendingInjects, type SpillStore } from "../../../src/watcher/pending-injects.ts";
import { WatcherMetrics } from "../../../src/watcher/watcher-metrics.ts";
import { tempDir, waitFor } from "../../support/daemon.ts";

const logger = createLogger("error", () => {});

function payload(index: number, sessionId?: string): PendingInject {
  return {
    id: `p-${index}`,
    ...(sessionId ? { sessionId } : {}),
    payload: { kind: "k", n: index },
    queuedAt: index,
    attempts: 0,
    ...(sessionId
      ? {}
      : {
          binding: {
            key: `uid-${index}|Reason`,
            kind: "k",
            reason: "Reason",
            severity: "critical",
            incident: { namespace: "ns", kind_of_object: "Pod", name: `p-${index}`, fingerprint: "f", cluster: "c" },
          } as OpenBinding,
        }),
  };
}

function journalOf(dir: string, window: number) {
  const db = new Database(join(dir, "store.db"), { create: true });
  // As the occurrence store opens its file.
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  const spill = new DeliverySpill(db, 1000);
  const journal = new PendingInjects(join(dir, "store.db.pending"), logger, { store: spill, windowSize: window });
  return { db, spill, journal };
}

const ids = (entries: PendingInject[]) => entries.map((entry) => entry.id);

describe("delivery spill", () => {
  test("past the window payloads spill, come back oldest first, and are seen by owes and hasOpen", () => {
    const { db, spill, journal } = journalOf(tempDir("spill-"), 3);
    for (let index = 1; index <= 8; index++) journal.put(payload(index, index % 2 === 0 ? "sess-a" : undefined));
    expect(ids(journal.entries())).toEqual(["p-1", "p-2", "p-3"]);
    expect(journal.size).toBe(8);
    expect(journal.spilled).toBe(5);
    expect(journal.owes("sess-a")).toBe(true);
    expect(journal.hasOpen("uid-7|Reason")).toBe(true);
    expect(journal.hasOpen("uid-8|Reason")).toBe(false);
    // A change to a payload in the window stays in the window (its session now exists).
    journal.put({ ...payload(1), sessionId: "sess-b" });
    expect(journal.entries()[0]?.sessionId).toBe("sess-b");
    const order: string[] = [];
    while (journal.size > 0) {
      const head = journal.entries()[0];
      if (!head) break;
      order.push(head.id);
      journal.remove(head.id);
    }
    expect(order).toEqual(["p-1", "p-2", "p-3", "p-4", "p-5", "p-6", "p-7", "p-8"]);
    expect(spill.size).toBe(0);
    expect(journal.owes("sess-a")).toBe(false);
    journal.close();
    db.close();
  });

  test("a restart finds the window in the journal and the rest in the spill, in order", () => {
    const dir = tempDir("spill-restart-");
    const first = journalOf(dir, 2);
    for (let index = 1; index <= 5; index++) first.journal.put(payload(index, "sess-a"));
    first.journal.remove("p-1");
    first.journal.close();
    first.db.close();
    const second = journalOf(dir, 2);
    expect(second.journal.size).toBe(4);
    const order: string[] = [];
    for (let head = second.journal.entries()[0]; head; head = second.journal.entries()[0]) {
      order.push(head.id);
      second.journal.remove(head.id);
    }
    expect(order).toEqual(["p-2", "p-3", "p-4", "p-5"]);
    second.journal.close();
    second.db.close();
  });

  test("a crash after journaling a refilled payload but before forgetting its row re-reads it once, by id", () => {
    const dir = tempDir("spill-crash-");
    const first = journalOf(dir, 1);
    first.journal.put(payload(1, "sess-a"));
    first.journal.put(payload(2, "sess-a"));
    // The crash: p-2 journaled into the window while its spilled row is still there.
    const row = first.spill.oldest();
    expect(row?.entry.id).toBe("p-2");
    first.journal.close();
    first.db.close();
    const journalText = `${JSON.stringify({ op: "put", entry: payload(2, "sess-a") })}\n`;
    require("node:fs").appendFileSync(join(dir, "store.db.pending"), journalText);
    const second = journalOf(dir, 2);
    expect(ids(second.journal.entries())).toEqual(["p-1", "p-2"]);
    expect(second.journal.size).toBe(2);
    second.journal.close();
    second.db.close();
  });
});

/** A sink that is down (every call a network error) until `up`. */
class OutageSink implements IncidentSink {
  readonly name = "outage";
  up = false;
  readonly opened: string[] = [];
  readonly appended: string[] = [];
  private next = 0;

  async open(payload: object): Promise<OpenResult> {
    if (!this.up) return { error: "connect ECONNREFUSED" };
    this.opened.push(String((payload as { name?: unknown }).name));
    return { id: `sess-${++this.next}` };
  }

  async append(id: string, payload: object): Promise<AppendResult> {
    if (!this.up) return { ok: false, error: "connect ECONNREFUSED" };
    this.appended.push(`${id}:${String((payload as { name?: unknown }).name)}`);
    return { ok: true };
  }
}

function binding(index: number): OpenBinding {
  return payload(index).binding as OpenBinding;
}

describe("the delivery queue with a spill", () => {
  const policy = { backoffMinMs: 10, backoffMaxMs: 50, retryAfterMaxMs: 100, giveUpAfterMs: 600_000, maxPending: 50 };

  test("opens past the window wait in the spill while the sink is down and each lands once when it returns", async () => {
    const dir = tempDir("spill-queue-");
    const { db, journal } = journalOf(dir, policy.maxPending);
    const metrics = new WatcherMetrics("prod");
    const sink = new OutageSink();
    const queue = new DeliveryQueue(sink, { journal, logger, metrics, policy });
    const bound: string[] = [];
    queue.listener = { opened: (open) => bound.push(open.key), delivered: () => {} };
    queue.start();
    for (let index = 1; index <= 400; index++) await queue.open({ kind: "k", name: `pod-${index}` }, binding(index));
    expect(metrics.render()).toContain('watcher_deliveries_pending{cluster="prod"} 400');
    expect(metrics.render()).toContain('watcher_deliveries_spilled{cluster="prod"} 350');
    expect(journal.entries().length).toBe(50);
    expect(queue.hasPendingOpen("uid-399|Reason")).toBe(true);
    sink.up = true;
    await waitFor(() => (journal.size === 0 ? true : undefined), 20_000, "every open delivered");
    // Each open landed once (the order across incidents is the queue's due order, not asserted).
    expect(sink.opened).toHaveLength(400);
    expect(new Set(sink.opened)).toEqual(new Set(Array.from({ length: 400 }, (_, index) => `pod-${index + 1}`)));
    expect(new Set(bound).size).toBe(400);
    expect(metrics.render()).not.toMatch(/watcher_deliveries_dropped_total\{/);
    await queue.stop();
    db.close();
  });

  test("a spill that cannot write gives the payload up, counted and logged; the caller does not throw", async () => {
    const metrics = new WatcherMetrics("prod");
    const lines: string[] = [];
    const failing: SpillStore = {
      size: 0,
      full: false,
      push: () => {
        throw new Error("database or disk is full");
      },
      oldest: () => undefined,
      forget: () => {},
      owes: () => false,
      hasOpen: () => false,
    };
    const journal = new PendingInjects(undefined, logger, { store: failing, windowSize: 2 });
    const queue = new DeliveryQueue(new OutageSink(), {
      journal,
      logger: createLogger("error", (line) => lines.push(line)),
      metrics,
      policy,
    });
    for (let index = 1; index <= 3; index++) await queue.open({ kind: "k", name: `pod-${index}` }, binding(index));
    expect(await queue.append("sess-x", { kind: "k", name: "pod-4" })).toMatchObject({ queued: true });
    expect(journal.size).toBe(2);
    expect(metrics.render()).toContain('watcher_deliveries_dropped_total{cause="overflow",cluster="prod"} 2');
    expect(lines.join("")).toContain("database or disk is full");
    await queue.stop();
  });

  test("without a spill the window is the bound: the oldest is given up, counted as an overflow", async () => {
    const metrics = new WatcherMetrics("prod");
    const journal = new PendingInjects(undefined, logger);
    const queue = new DeliveryQueue(new OutageSink(), { journal, logger, metrics, policy });
    for (let index = 1; index <= 60; index++) await queue.open({ kind: "k", name: `pod-${index}` }, binding(index));
    expect(journal.size).toBe(50);
    expect(metrics.render()).toContain('watcher_deliveries_dropped_total{cause="overflow",cluster="prod"} 10');
    await queue.stop();
  });
});
