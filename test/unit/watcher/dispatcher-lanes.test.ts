/**
 * The dispatcher's lanes (D450) against a sink that can hold one incident's calls: a slow open
 * or inject holds only its own incident (others open meanwhile, its duplicates wait and open
 * nothing, its follow-ups keep their order), a storm's open runs once while members attach in
 * their own lanes, a member whose own open was in flight when the storm formed is superseded
 * when it lands, a queued open's late binding keeps a duplicate waiting ahead of it from
 * opening a second session (D455), idle() (what shutdown waits for) covers a recovery sweep's
 * every chunk, and a signal the full lanes refuse is counted and stored,
 * not lost silently.
 */
import { describe, expect, test } from "bun:test";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { DedupCache } from "../../../src/watcher/core/dedup-cache.ts";
import type { OccurrenceRow } from "../../../src/watcher/core/occurrence.ts";
import type { Signal } from "../../../src/watcher/core/signal.ts";
import type { AppendResult, IncidentSink, OpenBinding, OpenResult } from "../../../src/watcher/core/sink.ts";
import { type DispatcherSettings, Dispatcher } from "../../../src/watcher/dispatcher.ts";
import { WatcherMetrics } from "../../../src/watcher/watcher-metrics.ts";
import { waitFor } from "../../support/daemon.ts";
import { DISPATCHER_SETTINGS } from "../../support/dispatcher-settings.ts";

/** Records every call; a call about a held pod name waits until `release(name)`. */
class HoldingSink implements IncidentSink {
  readonly name = "holding";
  readonly calls: string[] = [];
  private readonly held = new Map<string, { promise: Promise<void>; open: () => void }>();
  private next = 0;

  hold(name: string): void {
    let open: () => void = () => {};
    const promise = new Promise<void>((resolve) => {
      open = resolve;
    });
    this.held.set(name, { promise, open });
  }

  release(name: string): void {
    this.held.get(name)?.open();
    this.held.delete(name);
  }

  private async wait(payload: object): Promise<void> {
    const incident = (payload as { incident?: { name?: string } }).incident;
    const name = String((payload as { name?: unknown }).name ?? incident?.name ?? "");
    await this.held.get(name)?.promise;
  }

  async open(payload: object): Promise<OpenResult> {
    await this.wait(payload);
    const id = `sess-${++this.next}`;
    this.calls.push(`open:${id}:${label(payload)}`);
    return { id };
  }

  async append(id: string, payload: object): Promise<AppendResult> {
    await this.wait(payload);
    this.calls.push(`append:${id}:${label(payload)}`);
    return { ok: true };
  }
}

function label(payload: object): string {
  const body = payload as { kind?: unknown; name?: unknown; incident?: { name?: unknown } };
  return `${String(body.kind)}:${String(body.name ?? body.incident?.name ?? "")}`;
}

const SETTINGS: DispatcherSettings = DISPATCHER_SETTINGS;

const clock = Date.parse("2026-07-24T10:00:00Z");

function crash(index: number, overrides: Partial<Signal> = {}): Signal {
  return {
    kind: "cluster-event",
    reason: "BackOff",
    namespace: `ns-${index}`,
    kindOfObject: "Pod",
    name: `web-${index}`,
    uid: `uid-${index}`,
    message: "Back-off restarting failed container",
    eventCount: 3,
    firstSeen: clock,
    lastSeen: clock,
    type: "Warning",
    severity: "critical",
    node: `node-${index}`,
    ...overrides,
  };
}

function setup(settings: Partial<DispatcherSettings> = {}, topology?: (signal: Signal) => never[]) {
  const sink = new HoldingSink();
  const log: string[] = [];
  const rows: OccurrenceRow[] = [];
  const metrics = new WatcherMetrics("prod");
  const dispatcher = new Dispatcher(
    { ...SETTINGS, ...settings },
    {
      sink,
      metrics,
      logger: createLogger("debug", (line) => log.push(line)),
      now: () => clock,
      record: (row) => rows.push(row),
      ...(topology ? { topology } : {}),
    },
  );
  return { sink, dispatcher, log, metrics, rows };
}

describe("lanes in the dispatcher", () => {
  test("a held open holds its own incident only: others open, its duplicates wait and open nothing", async () => {
    const { sink, dispatcher } = setup();
    sink.hold("web-1");
    const slow = dispatcher.dispatch(crash(1));
    const duplicates = [dispatcher.dispatch(crash(1)), dispatcher.dispatch(crash(1))];
    // Other incidents open while web-1's open waits.
    expect(await Promise.all([2, 3, 4].map((index) => dispatcher.dispatch(crash(index))))).toEqual([
      "opened",
      "opened",
      "opened",
    ]);
    expect(sink.calls).toEqual([
      "open:sess-1:cluster-event:web-2",
      "open:sess-2:cluster-event:web-3",
      "open:sess-3:cluster-event:web-4",
    ]);
    sink.release("web-1");
    expect(await slow).toBe("opened");
    expect(await Promise.all(duplicates)).toEqual(["deduped", "deduped"]);
    await dispatcher.idle();
    expect(sink.calls.filter((call) => call.endsWith(":web-1"))).toEqual(["open:sess-4:cluster-event:web-1"]);
  });

  test("a held inject holds that incident's later payloads in order, and nobody else's", async () => {
    const { sink, dispatcher } = setup();
    expect(await dispatcher.dispatch(crash(1, { severity: "warning" }))).toBe("opened");
    sink.hold("web-1");
    // An escalation (critical over the warning its session heard) appends; it waits on the sink.
    const escalated = dispatcher.dispatch(crash(1, { severity: "critical", lastSeen: clock + 1000 }));
    const later = dispatcher.dispatch(crash(1, { severity: "critical", lastSeen: clock + 2000 }));
    expect(await dispatcher.dispatch(crash(2))).toBe("opened");
    sink.release("web-1");
    expect(await escalated).toBe("escalated");
    expect(await later).toBe("deduped");
    expect(sink.calls).toEqual([
      "open:sess-1:cluster-event:web-1",
      "open:sess-2:cluster-event:web-2",
      "append:sess-1:cluster-event:web-1",
    ]);
  });

  test("a storm opens once while members attach in their own lanes; a member whose open was in flight is superseded when it lands", async () => {
    const node = () => [{ kind: "Node", namespace: "", name: "node-x" }] as never[];
    const { sink, dispatcher, log } = setup({ storm: { min: 3, windowMs: 60_000, mineMin: 0, mine: false } }, node);
    sink.hold("web-1");
    const first = dispatcher.dispatch(crash(1));
    expect(await dispatcher.dispatch(crash(2))).toBe("opened");
    sink.hold("node-x");
    // The third forms the storm (its open held); the fourth and fifth attach meanwhile.
    const formed = dispatcher.dispatch(crash(3));
    const attached = [dispatcher.dispatch(crash(4)), dispatcher.dispatch(crash(5))];
    sink.release("node-x");
    expect(await formed).toBe("storm-formed");
    expect(await Promise.all(attached)).toEqual(["storm-attached", "storm-attached"]);
    expect(sink.calls.filter((call) => call.includes(":storm:"))).toHaveLength(1);
    const stormSession = /^open:(sess-\d+):storm:/.exec(sink.calls.find((call) => call.includes(":storm:")) ?? "")?.[1];
    // web-1's own open lands after the storm took it: it is superseded into the storm's session.
    sink.release("web-1");
    expect(await first).toBe("opened");
    await dispatcher.idle();
    const web1Session = /^open:(sess-\d+):cluster-event:web-1$/.exec(
      sink.calls.find((call) => call.endsWith("cluster-event:web-1")) ?? "",
    )?.[1];
    expect(sink.calls).toContain(`append:${web1Session}:storm.member_superseded:web-1`);
    expect(sink.calls.filter((call) => call.includes("storm.member:"))).toHaveLength(2);
    expect(dispatcher.dedup.get("uid-1|CrashLoopBackOff")?.sessionId).toBe(stormSession);
    expect(log.join("")).toContain("storm formed on Node node-x: 3 incidents");
  });

  test("a queued open that created its session while a duplicate waits in its lane: the duplicate opens nothing (D455)", async () => {
    // The delivery queue as the dispatcher sees it: web-1's open is queued (not attempted), and
    // openPending holds while the queue still owes it a session.
    const sink = new HoldingSink();
    const pending = new Set<string>();
    let binding: OpenBinding | undefined;
    const queueing: IncidentSink = {
      name: "queue",
      targetSession: undefined,
      open: async (payload, bound) => {
        if (label(payload) !== "cluster-event:web-1" || binding) return sink.open(payload);
        binding = bound;
        if (bound) pending.add(bound.key);
        return { error: "not attempted: down", queued: true };
      },
      append: (id, payload) => sink.append(id, payload),
    };
    const dispatcher = new Dispatcher(
      { ...SETTINGS, lanes: { concurrency: 1, perLane: 100, total: 100, delayedAfterMs: 1000 } },
      {
        sink: queueing,
        metrics: new WatcherMetrics("prod"),
        logger: createLogger("error", () => {}),
        now: () => clock,
        openPending: (key) => pending.has(key),
      },
    );
    expect(await dispatcher.dispatch(crash(1))).toBe("open-failed");
    // The one lane at work is another incident's held open; web-1's duplicate waits for its turn.
    sink.hold("web-2");
    const other = dispatcher.dispatch(crash(2));
    const duplicate = dispatcher.dispatch(crash(1, { lastSeen: clock + 1000 }));
    // Meanwhile the queue's retry creates web-1's session: no longer an open pending, and its
    // binding is queued behind the duplicate in web-1's lane.
    if (!binding) throw new Error("the open carried no binding");
    pending.delete(binding.key);
    const bound = dispatcher.bindQueuedOpen(binding, "sess-queued");
    sink.release("web-2");
    expect(await other).toBe("opened");
    expect(await duplicate).toBe("deduped");
    await bound;
    expect(sink.calls.filter((call) => call.endsWith(":web-1"))).toEqual([]);
    expect(dispatcher.dedup.get(binding.key)?.sessionId).toBe("sess-queued");
  });

  test("idle() waits for a recovery sweep's last chunk, not only the chunk in the lanes now", async () => {
    let now = clock;
    const sink = new HoldingSink();
    const dispatcher = new Dispatcher(SETTINGS, {
      sink,
      metrics: new WatcherMetrics("prod"),
      logger: createLogger("error", () => {}),
      now: () => now,
      clearance: () => ({ cleared: true, stableSince: clock }),
    });
    // More tracked incidents than one sweep chunk (100).
    for (let index = 1; index <= 150; index++) expect(await dispatcher.dispatch(crash(index))).toBe("opened");
    now = clock + 400_000;
    let swept = false;
    const sweep = dispatcher.sweepRecovery().then(() => {
      swept = true;
    });
    await dispatcher.idle();
    // Shutdown closes the delivery queue and the store once idle() resolves: nothing may follow.
    expect(swept).toBe(true);
    expect(sink.calls.filter((call) => call.includes(":resolved:"))).toHaveLength(150);
    await sweep;
  });

  test("signals over the lane bound are refused: counted, stored as error rows, logged once a minute", async () => {
    const { sink, dispatcher, metrics, rows, log } = setup({
      lanes: { concurrency: 4, perLane: 2, total: 100, delayedAfterMs: 1000 },
    });
    sink.hold("web-1");
    const accepted = [dispatcher.dispatch(crash(1)), dispatcher.dispatch(crash(1)), dispatcher.dispatch(crash(1))];
    expect(await dispatcher.dispatch(crash(1))).toBe("refused");
    expect(await dispatcher.dispatch(crash(1))).toBe("refused");
    expect(metrics.render()).toContain('watcher_dispatch_refused_total{bound="lane",cluster="prod"} 2');
    expect(metrics.render()).toMatch(/watcher_dispatch_queued\{cluster="prod"\} 2/);
    expect(rows.filter((row) => row.route === "error")).toHaveLength(2);
    expect(log.filter((line) => line.includes("the incident's lane is full"))).toHaveLength(1);
    // Another incident is not refused.
    expect(await dispatcher.dispatch(crash(2))).toBe("opened");
    sink.release("web-1");
    expect(await Promise.all(accepted)).toEqual(["opened", "deduped", "deduped"]);
    await waitFor(() => (dispatcher.dedup.get("uid-1|CrashLoopBackOff")?.sessionId ? true : undefined), 5000, "bound");
  });

  test("a tracked incident the full dedup cache dropped is forgotten by the next sweep, counted and logged (D457)", async () => {
    const sink = new HoldingSink();
    const log: string[] = [];
    const metrics = new WatcherMetrics("prod");
    const dispatcher = new Dispatcher(SETTINGS, {
      sink,
      metrics,
      logger: createLogger("debug", (line) => log.push(line)),
      now: () => clock,
      dedup: new DedupCache(SETTINGS.dedupWindowMs, 2),
      clearance: () => ({ cleared: false }),
    });
    for (const index of [1, 2, 3]) expect(await dispatcher.dispatch(crash(index))).toBe("opened");
    expect(dispatcher.recovery.size).toBe(3);
    await dispatcher.sweepRecovery();
    expect(dispatcher.recovery.size).toBe(2);
    expect(metrics.render()).toContain('watcher_recovery_drops_total{cause="evicted",cluster="prod"} 1');
    expect(log.filter((line) => line.includes("left the full dedup cache"))).toHaveLength(1);
    await dispatcher.sweepRecovery();
    expect(metrics.render()).toContain('watcher_recovery_drops_total{cause="evicted",cluster="prod"} 1');
  });
});
