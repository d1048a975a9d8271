/**
 * The dispatch pipeline against a recording sink: one open per incident, duplicates suppressed,
 * a failed open retried on the next duplicate (or, through the delivery queue, retried by the
 * queue while its duplicates open nothing), storms (one session, superseded notes, late members,
 * the storm's own resolved), recovery outcomes into the bound session, shared mode, fit, and the
 * dedup file surviving a restart.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { DedupCache } from "../../../src/watcher/core/dedup-cache.ts";
import type { Signal } from "../../../src/watcher/core/signal.ts";
import type { AppendResult, IncidentSink, OpenResult } from "../../../src/watcher/core/sink.ts";
import { loadDedupFile, saveDedupFile } from "../../../src/watcher/dedup-file.ts";
import { DeliveryQueue } from "../../../src/watcher/delivery-queue.ts";
import { type DispatcherSettings, Dispatcher, type DispatcherDeps } from "../../../src/watcher/dispatcher.ts";
import { PendingInjects } from "../../../src/watcher/pending-injects.ts";
import { WatcherMetrics } from "../../../src/watcher/watcher-metrics.ts";
import { tempDir, waitFor } from "../../support/daemon.ts";
import { DISPATCHER_SETTINGS } from "../../support/dispatcher-settings.ts";

class RecordingSink implements IncidentSink {
  readonly name = "recording";
  readonly calls: Array<{ op: "open" | "append"; id: string; payload: Record<string, unknown> }> = [];
  failOpens = 0;
  private next = 0;

  async open(payload: object): Promise<OpenResult> {
    if (this.failOpens > 0) {
      this.failOpens--;
      return { error: "HTTP 503" };
    }
    const id = `sess-${++this.next}`;
    this.calls.push({ op: "open", id, payload: payload as Record<string, unknown> });
    return { id };
  }

  async append(id: string, payload: object): Promise<AppendResult> {
    this.calls.push({ op: "append", id, payload: payload as Record<string, unknown> });
    return { ok: true };
  }

  kinds(): string[] {
    return this.calls.map((call) => `${call.op}:${call.id}:${String(call.payload.kind)}`);
  }
}

const SETTINGS: DispatcherSettings = DISPATCHER_SETTINGS;

let clock = Date.parse("2026-07-24T10:00:00Z");

function crash(index: number, overrides: Partial<Signal> = {}): Signal {
  return {
    kind: "cluster-event",
    reason: "BackOff",
    namespace: "shop",
    kindOfObject: "Pod",
    name: `web-${index}`,
    uid: `uid-${index}`,
    message: "Back-off restarting failed container",
    eventCount: 3,
    firstSeen: clock,
    lastSeen: clock,
    type: "Warning",
    severity: "critical",
    node: "node-1",
    ...overrides,
  };
}

function setup(settings: Partial<DispatcherSettings> = {}, deps: Partial<DispatcherDeps> = {}) {
  const sink = new RecordingSink();
  const log: string[] = [];
  const metrics = new WatcherMetrics("prod");
  const dispatcher = new Dispatcher(
    { ...SETTINGS, ...settings },
    { sink, metrics, logger: createLogger("debug", (line) => log.push(line)), now: () => clock, ...deps },
  );
  return { sink, dispatcher, log, metrics };
}

describe("per-incident", () => {
  test("one open per (uid, reason); a repeat inside the window is suppressed and logged", async () => {
    const { sink, dispatcher, log, metrics } = setup({}, { enrich: async () => "kind=bundle.target\n" });
    expect(await dispatcher.dispatch(crash(1))).toBe("opened");
    clock += 1000;
    expect(await dispatcher.dispatch(crash(1, { lastSeen: clock, eventCount: 4 }))).toBe("deduped");
    expect(await dispatcher.dispatch(crash(1, { reason: "Unhealthy", eventCount: 1 }))).toBe("filtered");
    expect(sink.kinds()).toEqual(["open:sess-1:cluster-event"]);
    expect(sink.calls[0]?.payload).toMatchObject({
      reason: "BackOff",
      cluster: "prod",
      uid: "uid-1",
      count: 1,
      enrichment: { bundle: "kind=bundle.target\n" },
    });
    expect(log.join("")).toContain("fire BackOff pod=shop/web-1 → sid=sess-1 (mode=per-incident)");
    expect(log.join("")).toContain("dedup BackOff pod=shop/web-1 (count=2, window active)");
    expect(metrics.render()).toContain(
      'watcher_events_deduped_total{cluster="prod",namespace="shop",reason="BackOff"} 1',
    );
    expect(metrics.render()).toContain('watcher_events_filtered_total{cluster="prod",gate="unhealthy_debounce"} 1');
  });

  test("a duplicate above the severity its session heard is escalated into it once (D416); the same severity again is a duplicate", async () => {
    const { sink, dispatcher, log } = setup();
    const pressure = (severity: "warning" | "critical") =>
      crash(7, {
        kind: "objectstate.node_pressure",
        reason: "node_pressure",
        kindOfObject: "Node",
        namespace: "",
        name: "node-7",
        type: "",
        eventCount: 1,
        severity,
        lastSeen: clock,
      });
    expect(await dispatcher.dispatch(pressure("warning"))).toBe("opened");
    clock += 1000;
    expect(await dispatcher.dispatch(pressure("warning"))).toBe("deduped");
    clock += 1000;
    expect(await dispatcher.dispatch(pressure("critical"))).toBe("escalated");
    clock += 1000;
    expect(await dispatcher.dispatch(pressure("critical"))).toBe("deduped");
    expect(await dispatcher.dispatch(pressure("warning"))).toBe("deduped");
    expect(sink.kinds()).toEqual(["open:sess-1:objectstate.node_pressure", "append:sess-1:objectstate.node_pressure"]);
    expect(sink.calls[0]?.payload).toMatchObject({ severity: "warning" });
    expect(sink.calls[1]?.payload).toMatchObject({ severity: "critical", reason: "node_pressure" });
    expect(log.join("")).toContain("escalate node_pressure Node=/node-7 to critical → sid=sess-1");
  });

  test("an escalation whose incident is unknown after a restart (no severity kept) is a duplicate", async () => {
    const { sink, dispatcher } = setup();
    expect(await dispatcher.dispatch(crash(8, { severity: "warning" }))).toBe("opened");
    const entry = dispatcher.dedup.get("uid-8|CrashLoopBackOff");
    expect(entry?.severity).toBe("warning");
    if (entry) delete entry.severity;
    clock += 1000;
    expect(await dispatcher.dispatch(crash(8, { severity: "critical", lastSeen: clock }))).toBe("deduped");
    expect(sink.kinds()).toEqual(["open:sess-1:cluster-event"]);
  });

  test("a failed open is retried by the next duplicate, once", async () => {
    const { sink, dispatcher } = setup();
    sink.failOpens = 1;
    expect(await dispatcher.dispatch(crash(1))).toBe("open-failed");
    clock += 1000;
    expect(await dispatcher.dispatch(crash(1, { lastSeen: clock }))).toBe("retried");
    clock += 1000;
    expect(await dispatcher.dispatch(crash(1, { lastSeen: clock }))).toBe("deduped");
    expect(sink.kinds()).toEqual(["open:sess-1:cluster-event"]);
  });

  test("through the delivery queue: a failed open is queued, its duplicates open nothing, and the session it creates is bound", async () => {
    const sink = new RecordingSink();
    const log: string[] = [];
    const logger = createLogger("debug", (line) => log.push(line));
    const metrics = new WatcherMetrics("prod");
    const queue = new DeliveryQueue(sink, {
      journal: new PendingInjects(undefined, logger),
      logger,
      metrics,
      policy: { backoffMinMs: 20, backoffMaxMs: 40, retryAfterMaxMs: 100, giveUpAfterMs: 60_000, maxPending: 10 },
    });
    const dispatcher = new Dispatcher(SETTINGS, {
      sink: queue,
      metrics,
      logger,
      now: () => clock,
      openPending: (key) => queue.hasPendingOpen(key),
    });
    queue.listener = {
      opened: (binding, sessionId) => void dispatcher.bindQueuedOpen(binding, sessionId),
      delivered: (binding) => dispatcher.noteQueuedDelivery(binding),
    };
    queue.start();
    sink.failOpens = 1;
    expect(await dispatcher.dispatch(crash(1))).toBe("open-failed");
    clock += 1000;
    expect(await dispatcher.dispatch(crash(1, { lastSeen: clock }))).toBe("deduped");
    await waitFor(
      () => (dispatcher.dedup.get("uid-1|CrashLoopBackOff")?.sessionId ? true : undefined),
      3000,
      "bound by the queued open",
    );
    expect(dispatcher.dedup.get("uid-1|CrashLoopBackOff")?.sessionId).toBe("sess-1");
    expect(sink.kinds()).toEqual(["open:sess-1:cluster-event"]);
    expect(
      log.some((line) => line.includes("fire BackOff pod=shop/web-1 → sid=sess-1 (mode=per-incident, queued open)")),
    ).toBe(true);
    expect(metrics.render()).toContain(
      'watcher_events_injected_total{cluster="prod",namespace="shop",reason="BackOff"} 1',
    );
    clock += 1000;
    expect(await dispatcher.dispatch(crash(1, { lastSeen: clock }))).toBe("deduped");
    await queue.stop();
  });

  test("an over-limit payload is shrunk before the sink sees it", async () => {
    const { sink, dispatcher, metrics } = setup({ injectMaxBytes: 600 }, { enrich: async () => "b".repeat(2000) });
    await dispatcher.dispatch(crash(1, { message: "m".repeat(1500) }));
    const payload = sink.calls[0]?.payload ?? {};
    expect(payload.enrichment).toBeUndefined();
    expect(String(payload.message).endsWith("…[truncated]")).toBe(true);
    expect(metrics.render()).toContain('watcher_inject_shrinks_total{cluster="prod",shed="message"} 1');
  });

  test("shared mode: the dedup and the payloads are the same, enrichment is not attached", async () => {
    const { sink, dispatcher } = setup({ mode: "shared" }, { enrich: async () => "bundle" });
    await dispatcher.dispatch(crash(1));
    expect(sink.calls[0]?.payload.enrichment).toBeUndefined();
  });

  test("info is stored, never paged (D393): no open, no dedup entry, a row routed info-stored; a warning of the same key still opens; shared mode delivers it", async () => {
    const rows: Array<{ route: string; kind: string; severity: string }> = [];
    const { sink, dispatcher, metrics } = setup({}, { record: (row) => rows.push(row) });
    const scaleUp = crash(1, { kind: "capacity.scaleup", reason: "scaleup", severity: "info", type: "" });
    expect(await dispatcher.dispatch(scaleUp)).toBe("info-stored");
    expect(await dispatcher.dispatch({ ...scaleUp, lastSeen: clock + 1 })).toBe("info-stored");
    expect(sink.calls).toEqual([]);
    expect(dispatcher.dedup.size).toBe(0);
    expect(rows.map((row) => `${row.route}:${row.kind}:${row.severity}`)).toEqual([
      "info-stored:capacity.scaleup:info",
      "info-stored:capacity.scaleup:info",
    ]);
    expect(metrics.render()).toContain(
      'watcher_findings_total{cluster="prod",kind="capacity.scaleup",severity="info"} 2',
    );
    expect(await dispatcher.dispatch({ ...scaleUp, severity: "warning" })).toBe("opened");
    // --severity can make a kind info: then it is stored too.
    const quiet = setup({ severityOverrides: new Map([["cluster-event", "info"]]) });
    expect(await quiet.dispatcher.dispatch(crash(2))).toBe("info-stored");
    expect(quiet.sink.calls).toEqual([]);
    // Shared mode has no routing: info goes to the target session like every severity.
    const shared = setup({ mode: "shared" });
    expect(await shared.dispatcher.dispatch(scaleUp)).toBe("opened");
  });
});

describe("recovery", () => {
  test("resolved then resolved.reverted go into the incident's session", async () => {
    let ready = false;
    let since = 0;
    const { sink, dispatcher } = setup(
      {},
      { clearance: () => (ready ? { cleared: true, stableSince: since } : { cleared: false }) },
    );
    await dispatcher.dispatch(crash(1));
    ready = true;
    since = clock + 10_000;
    clock += 20_000;
    await dispatcher.sweepRecovery();
    clock += 300_000;
    await dispatcher.sweepRecovery();
    ready = false;
    clock += 60_000;
    await dispatcher.sweepRecovery();
    expect(sink.kinds()).toEqual([
      "open:sess-1:cluster-event",
      "append:sess-1:resolved",
      "append:sess-1:resolved.reverted",
    ]);
    expect(sink.calls[1]?.payload).toMatchObject({
      reason: "CrashLoopBackOff",
      uid: "uid-1",
      cleared_after: "10s",
      observed_stable_for: "5m10s",
      resolution: "recovered",
    });
    expect(sink.calls[2]?.payload.reverted_after).toBe("1m0s");
  });
});

describe("storms", () => {
  const topology = (signal: Signal) => (signal.node ? [{ kind: "Node", namespace: "", name: signal.node }] : []);

  test("five pods on one node: one storm session, superseded notes, late members attached, resolved when all clear", async () => {
    const cleared = new Set<string>();
    let clearedAt = 0;
    const { sink, dispatcher, log } = setup(
      { storm: { min: 3, windowMs: 60_000, mineMin: 0, mine: false } },
      {
        topology,
        clearance: (uid) => (cleared.has(uid) ? { cleared: true, stableSince: clearedAt } : { cleared: false }),
      },
    );
    for (let i = 1; i <= 5; i++) {
      clock += 1000;
      await dispatcher.dispatch(crash(i, { namespace: i % 2 ? "shop" : "web" }));
    }
    expect(sink.kinds()).toEqual([
      "open:sess-1:cluster-event",
      "open:sess-2:cluster-event",
      "open:sess-3:storm",
      "append:sess-1:storm.member_superseded",
      "append:sess-2:storm.member_superseded",
      "append:sess-3:storm.member",
      "append:sess-3:storm.member",
    ]);
    const storm = sink.calls[2]?.payload ?? {};
    expect(storm).toMatchObject({
      ancestor_kind: "Node",
      ancestor_name: "node-1",
      affected_count: 3,
      namespaces_count: 2,
      context: { node: "node-1" },
    });
    expect(
      (storm.representative_incidents as Array<{ uid: string; session_id?: string }>).map((ref) => [
        ref.uid,
        ref.session_id,
      ]),
    ).toEqual([
      ["uid-1", "sess-1"],
      ["uid-2", "sess-2"],
      ["uid-3", undefined],
    ]);
    expect(log.join("")).toContain("storm formed on Node node-1: 3 incidents across 2 namespace(s) → sid=sess-3");
    // A member's duplicate stays suppressed; its outcome routes to the storm session.
    clock += 1000;
    expect(await dispatcher.dispatch(crash(1, { lastSeen: clock }))).toBe("deduped");
    for (let i = 1; i <= 5; i++) cleared.add(`uid-${i}`);
    clock += 1000;
    clearedAt = clock;
    await dispatcher.sweepRecovery();
    expect(sink.calls).toHaveLength(7);
    clock += 300_000;
    await dispatcher.sweepRecovery();
    const tail = sink.kinds().slice(7);
    expect(tail.filter((kind) => kind === "append:sess-3:resolved")).toHaveLength(6);
    const last = sink.calls.at(-1)?.payload ?? {};
    expect(last).toMatchObject({
      kind: "resolved",
      reason: "storm",
      uid: "storm:Node//node-1",
      kind_of_object: "Node",
      name: "node-1",
    });
  });
});

describe("dedup persistence", () => {
  test("a restart with the persisted cache opens no duplicate and re-tracks bound incidents", async () => {
    const file = join(tempDir(), "dedup.json");
    const first = setup();
    await first.dispatcher.dispatch(crash(1));
    saveDedupFile(file, first.dispatcher.dedup);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(Object.keys(JSON.parse(readFileSync(file, "utf8")))).toEqual(["uid-1|CrashLoopBackOff"]);
    const cache = new DedupCache(300_000);
    const logger = createLogger("error", () => {});
    expect(loadDedupFile(file, cache, logger)).toBe(1);
    const second = setup({}, { dedup: cache });
    expect(second.dispatcher.recovery.size).toBe(1);
    expect(await second.dispatcher.dispatch(crash(1))).toBe("deduped");
    clock += 1000;
    expect(await second.dispatcher.dispatch(crash(1, { lastSeen: clock }))).toBe("deduped");
    expect(second.sink.calls).toEqual([]);
  });

  test("a corrupt file starts empty and is left alone", () => {
    const file = join(tempDir(), "dedup.json");
    writeFileSync(file, "{not json");
    const lines: string[] = [];
    expect(
      loadDedupFile(
        file,
        new DedupCache(1000),
        createLogger("info", (line) => lines.push(line)),
      ),
    ).toBe(0);
    expect(lines.join("")).toContain("unreadable");
    expect(readFileSync(file, "utf8")).toBe("{not json");
  });
});

describe("recovery sweep", () => {
  test("a large sweep runs in chunks: a signal arriving meanwhile is opened before the sweep ends", async () => {
    const { sink, dispatcher } = setup({}, { clearance: () => ({ cleared: true, stableSince: clock - 600_000 }) });
    for (let i = 1; i <= 250; i++) await dispatcher.dispatch(crash(i));
    clock += 600_000;
    const sweep = dispatcher.sweepRecovery();
    const late = dispatcher.dispatch(crash(999, { lastSeen: clock, firstSeen: clock }));
    await Promise.all([sweep, late]);
    const order = sink.calls.slice(250).map((call) => (call.op === "open" ? "open" : "resolved"));
    expect(order.filter((op) => op === "resolved")).toHaveLength(250);
    expect(order.indexOf("open")).toBe(100);
  });
});
