/**
 * Severity routing (D418-D421) against a recording sink: critical opens a session, warnings are
 * buffered into watchboard digests (one per full batch or per flush age) in one board session,
 * rotated after `--watchboard-rotate` digests; a duplicate warning is counted into its entry and
 * pages nothing; a board warning turning critical opens its own session (and keeps it when its
 * digest was in flight, D456); info is stored only;
 * shared mode routes nothing; a recurrence soon after `resolved` opens with `triage.regressed`;
 * the watchboard flags' defaults.
 */
import { describe, expect, test } from "bun:test";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { DedupCache } from "../../../src/watcher/core/dedup-cache.ts";
import { envelopeBytes } from "../../../src/watcher/core/fit.ts";
import { rfc3339 } from "../../../src/watcher/core/go-time.ts";
import type { OccurrenceRow } from "../../../src/watcher/core/occurrence.ts";
import { RegressionMemory } from "../../../src/watcher/core/regression.ts";
import type { Signal } from "../../../src/watcher/core/signal.ts";
import type { Ancestor } from "../../../src/watcher/core/storm.ts";
import type { AppendResult, IncidentSink, OpenResult } from "../../../src/watcher/core/sink.ts";
import { BoardBuffer, BoardState, entryOf, tickPeriodMs } from "../../../src/watcher/core/watchboard.ts";
import { type DispatcherSettings, Dispatcher } from "../../../src/watcher/dispatcher.ts";
import { Watchboard } from "../../../src/watcher/watchboard.ts";
import { WatcherMetrics } from "../../../src/watcher/watcher-metrics.ts";
import { waitFor } from "../../support/daemon.ts";
import { DISPATCHER_SETTINGS } from "../../support/dispatcher-settings.ts";

class RecordingSink implements IncidentSink {
  readonly name = "recording";
  readonly calls: Array<{ op: "open" | "append"; id: string; payload: Record<string, unknown> }> = [];
  failOpens = 0;
  /** While set, a digest's open waits for it. */
  holdDigests: Promise<void> | undefined;
  private next = 0;

  async open(payload: object): Promise<OpenResult> {
    if ((payload as { kind?: unknown }).kind === "watchboard.digest") await this.holdDigests;
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

function signal(index: number, overrides: Partial<Signal> = {}): Signal {
  return {
    kind: "rollout.stall",
    reason: "rollout_stall",
    namespace: "shop",
    kindOfObject: "Deployment",
    name: `web-${index}`,
    uid: `uid-${index}`,
    message: "no ready-count progress for 3m",
    eventCount: 1,
    firstSeen: clock,
    lastSeen: clock,
    type: "",
    severity: "warning",
    ...overrides,
  };
}

function setup(
  board: { batch?: number; flushMs?: number; rotate?: number; injectMaxBytes?: number } | undefined,
  settings: Partial<DispatcherSettings> = {},
  clearance?: () => { cleared: boolean; stableSince?: number },
  topology?: (signal: Signal) => Ancestor[],
) {
  const sink = new RecordingSink();
  const log: string[] = [];
  const rows: OccurrenceRow[] = [];
  const metrics = new WatcherMetrics("prod");
  const logger = createLogger("debug", (line) => log.push(line));
  const dedup = new DedupCache(SETTINGS.dedupWindowMs);
  const now = () => clock;
  const watchboard = board
    ? new Watchboard(
        { cluster: "prod", batch: 5, flushMs: 60_000, rotate: 200, injectMaxBytes: 8192, ...board },
        { sink, dedup, logger, metrics, now },
      )
    : undefined;
  const dispatcher = new Dispatcher(
    { ...SETTINGS, ...settings },
    {
      sink,
      metrics,
      logger,
      now,
      dedup,
      record: (row) => rows.push(row),
      ...(watchboard ? { watchboard } : {}),
      ...(clearance ? { clearance } : {}),
      ...(topology ? { topology } : {}),
    },
  );
  return { sink, dispatcher, watchboard, rows, log, dedup, metrics };
}

describe("routing by severity", () => {
  test("critical opens a session; twenty warnings arrive as one digest in one board session (batch 20)", async () => {
    // Room for every message: fitting is the next describe's.
    const { sink, dispatcher, watchboard, rows, metrics } = setup({ batch: 20, injectMaxBytes: 32_768 });
    expect(await dispatcher.dispatch(signal(0, { severity: "critical", kind: "objectstate.node_notready" }))).toBe(
      "opened",
    );
    for (let index = 1; index <= 19; index++) expect(await dispatcher.dispatch(signal(index))).toBe("watchboard");
    expect(sink.kinds()).toEqual(["open:sess-1:objectstate.node_notready"]);
    expect(watchboard?.buffered).toBe(19);
    expect(metrics.render()).toContain('watcher_watchboard_buffered{cluster="prod"} 19');
    expect(await dispatcher.dispatch(signal(20))).toBe("watchboard");
    expect(sink.kinds()).toEqual(["open:sess-1:objectstate.node_notready", "open:sess-2:watchboard.digest"]);
    const digest = sink.calls[1]?.payload as { entries: Array<Record<string, unknown>> };
    expect(digest).toMatchObject({ kind: "watchboard.digest", cluster: "prod", board_generation: 1, sequence: 1 });
    expect(digest.entries).toHaveLength(20);
    expect(digest.entries[0]).toEqual({
      kind: "rollout.stall",
      fingerprint: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
      reason: "rollout_stall",
      namespace: "shop",
      kind_of_object: "Deployment",
      name: "web-1",
      uid: "uid-1",
      count: 1,
      first_seen: "2026-07-24T10:00:00Z",
      last_seen: "2026-07-24T10:00:00Z",
      severity: "warning",
      message: "no ready-count progress for 3m",
    });
    expect(rows.filter((row) => row.route === "watchboard")).toHaveLength(20);
    expect(rows.find((row) => row.uid === "uid-0")).toMatchObject({ route: "injected", sessionId: "sess-1" });
    expect(watchboard?.sessionId).toBe("sess-2");
    const rendered = metrics.render();
    expect(rendered).toContain('watcher_watchboard_entries_total{cluster="prod",kind="rollout.stall"} 20');
    expect(rendered).toContain('watcher_watchboard_digests_total{cluster="prod"} 1');
    expect(rendered).toContain('watcher_watchboard_buffered{cluster="prod"} 0');
  });

  test("a duplicate warning is counted into its entry and pages nothing, before and after its digest", async () => {
    const { sink, dispatcher, watchboard, dedup } = setup({ batch: 2 });
    await dispatcher.dispatch(signal(1));
    clock += 1000;
    expect(await dispatcher.dispatch(signal(1, { lastSeen: clock }))).toBe("deduped");
    expect(sink.calls).toEqual([]);
    await dispatcher.dispatch(signal(2));
    const digest = sink.calls[0]?.payload as { entries: Array<Record<string, unknown>> };
    expect(digest.entries.map((entry) => [entry.uid, entry.count])).toEqual([
      ["uid-1", 2],
      ["uid-2", 1],
    ]);
    expect(dedup.get("uid-1|rollout_stall")?.sessionId).toBe(watchboard?.sessionId ?? "none");
    clock += 1000;
    expect(await dispatcher.dispatch(signal(2, { lastSeen: clock }))).toBe("deduped");
    expect(sink.kinds()).toEqual(["open:sess-1:watchboard.digest"]);
  });

  test("a warning on the board that turns critical opens its own session, once", async () => {
    const { sink, dispatcher, watchboard } = setup({ batch: 5 });
    await dispatcher.dispatch(signal(1));
    clock += 1000;
    expect(await dispatcher.dispatch(signal(1, { severity: "critical", lastSeen: clock }))).toBe("escalated");
    expect(watchboard?.holds("uid-1|rollout_stall")).toBe(false);
    clock += 1000;
    expect(await dispatcher.dispatch(signal(1, { severity: "critical", lastSeen: clock }))).toBe("deduped");
    expect(sink.kinds()).toEqual(["open:sess-1:rollout.stall"]);
    expect(sink.calls[0]?.payload).toMatchObject({ severity: "critical", count: 2 });
  });

  test("a warning that turns critical while its digest is in flight keeps its own session when the digest lands (D456)", async () => {
    const { sink, dispatcher, watchboard, dedup } = setup({ batch: 5 });
    await dispatcher.dispatch(signal(1));
    let land: () => void = () => {};
    sink.holdDigests = new Promise<void>((resolve) => {
      land = resolve;
    });
    const flushing = watchboard?.flush(true);
    await waitFor(() => (watchboard?.buffered === 0 ? true : undefined), 5000, "the digest taken");
    clock += 1000;
    expect(await dispatcher.dispatch(signal(1, { severity: "critical", lastSeen: clock }))).toBe("escalated");
    land();
    await flushing;
    const own = sink.calls.find((call) => call.payload.kind === "rollout.stall")?.id;
    expect(dedup.get("uid-1|rollout_stall")?.sessionId).toBe(own);
    clock += 1000;
    expect(await dispatcher.dispatch(signal(1, { severity: "critical", lastSeen: clock }))).toBe("deduped");
    expect(sink.kinds().filter((kind) => kind.endsWith(":rollout.stall"))).toHaveLength(1);
  });

  test("a warning that turns critical while its digest is in flight is not put back on the board when the digest fails (D456)", async () => {
    const { sink, dispatcher, watchboard } = setup({ batch: 5 });
    await dispatcher.dispatch(signal(1));
    await dispatcher.dispatch(signal(2));
    let land: () => void = () => {};
    sink.holdDigests = new Promise<void>((resolve) => {
      land = resolve;
    });
    const flushing = watchboard?.flush(true);
    await waitFor(() => (watchboard?.buffered === 0 ? true : undefined), 5000, "the digest taken");
    clock += 1000;
    expect(await dispatcher.dispatch(signal(1, { severity: "critical", lastSeen: clock }))).toBe("escalated");
    sink.failOpens = 1;
    land();
    await flushing;
    // The other warning waits for the next digest; the escalated one is not on the board.
    expect(watchboard?.holds("uid-2|rollout_stall")).toBe(true);
    expect(watchboard?.holds("uid-1|rollout_stall")).toBe(false);
    clock += 1000;
    expect(await dispatcher.dispatch(signal(1, { severity: "critical", lastSeen: clock }))).toBe("deduped");
    expect(sink.kinds().filter((kind) => kind.endsWith(":rollout.stall"))).toHaveLength(1);
  });

  test("a slow board holds the lane that filled the batch only: later warnings and a critical go on (D450)", async () => {
    const { sink, dispatcher, watchboard } = setup(
      { batch: 1 },
      { lanes: { concurrency: 2, perLane: 100, total: 100, delayedAfterMs: 1000 } },
    );
    let land: () => void = () => {};
    sink.holdDigests = new Promise<void>((resolve) => {
      land = resolve;
    });
    const first = dispatcher.dispatch(signal(1));
    await waitFor(() => (watchboard?.buffered === 0 ? true : undefined), 5000, "the first digest taken");
    try {
      // The running flush takes the next warning itself; its lane does not wait on the board.
      expect(await dispatcher.dispatch(signal(2))).toBe("watchboard");
      expect(await dispatcher.dispatch(signal(3, { severity: "critical" }))).toBe("opened");
    } finally {
      land();
    }
    expect(await first).toBe("watchboard");
    await watchboard?.flush();
    expect(watchboard?.holds("uid-2|rollout_stall")).toBe(false);
    expect(sink.calls.filter((call) => call.payload.kind === "watchboard.digest")).toHaveLength(2);
  });

  test("the flush age delivers a partial batch; a failed open keeps the entries for the next flush", async () => {
    const { sink, dispatcher, watchboard, metrics } = setup({ batch: 5, flushMs: 60_000 });
    const start = clock;
    await dispatcher.dispatch(signal(1));
    await dispatcher.dispatch(signal(2));
    clock += 59_000;
    await watchboard?.flush();
    expect(sink.calls).toEqual([]);
    clock += 1000;
    sink.failOpens = 1;
    await watchboard?.flush();
    expect(sink.calls).toEqual([]);
    expect(watchboard?.buffered).toBe(2);
    expect(metrics.render()).toContain(
      'watcher_inject_errors_total{cluster="prod",http_code="session_create",reason="watchboard"} 1',
    );
    await watchboard?.flush();
    expect(sink.kinds()).toEqual(["open:sess-1:watchboard.digest"]);
    expect(sink.calls[0]?.payload).toMatchObject({
      window_start: rfc3339(start),
      window_end: rfc3339(start + 60_000),
    });
  });

  test("a warning the full board dropped goes back to the board on its next duplicate, never to a session", async () => {
    const { sink, dispatcher, watchboard, log } = setup({ batch: 5 });
    sink.failOpens = 100;
    for (let index = 1; index <= 5; index++) await dispatcher.dispatch(signal(index));
    expect(watchboard?.buffered).toBe(5);
    watchboard?.release("uid-1|rollout_stall");
    clock += 1000;
    expect(await dispatcher.dispatch(signal(1, { lastSeen: clock }))).toBe("watchboard");
    expect(watchboard?.holds("uid-1|rollout_stall")).toBe(true);
    expect(sink.calls).toEqual([]);
    expect(log.some((line) => line.includes("retry open"))).toBe(false);
  });

  test("after --watchboard-rotate digests the next one opens a successor, and the old board hears watchboard.rotated", async () => {
    const { sink, dispatcher, metrics } = setup({ batch: 1, rotate: 2 });
    for (let index = 1; index <= 5; index++) await dispatcher.dispatch(signal(index));
    expect(sink.kinds()).toEqual([
      "open:sess-1:watchboard.digest",
      "append:sess-1:watchboard.digest",
      "open:sess-2:watchboard.digest",
      "append:sess-1:watchboard.rotated",
      "append:sess-2:watchboard.digest",
      "open:sess-3:watchboard.digest",
      "append:sess-2:watchboard.rotated",
    ]);
    // The successor is opened with its digest first, so the rotation names it.
    expect(sink.calls.map((call) => [call.payload.board_generation, call.payload.sequence])).toEqual([
      [1, 1],
      [1, 2],
      [2, 1],
      [1, undefined],
      [2, 2],
      [3, 1],
      [2, undefined],
    ]);
    expect(sink.calls[3]?.payload).toEqual({
      kind: "watchboard.rotated",
      cluster: "prod",
      board_generation: 1,
      successor_session_id: "sess-2",
      injects_count: 2,
      rotated_at: rfc3339(clock),
    });
    expect(metrics.render()).toContain('watcher_watchboard_rotations_total{cluster="prod"} 2');
  });

  test("info is stored only; shared mode routes nothing (a warning goes to the target session)", async () => {
    const { sink, dispatcher, rows } = setup({ batch: 1 });
    expect(await dispatcher.dispatch(signal(1, { severity: "info", kind: "capacity.scaleup" }))).toBe("info-stored");
    expect(sink.calls).toEqual([]);
    expect(rows).toEqual([expect.objectContaining({ route: "info-stored", uid: "uid-1", severity: "info" })]);
    const shared = setup(undefined, { mode: "shared" });
    expect(await shared.dispatcher.dispatch(signal(2))).toBe("opened");
    expect(shared.sink.kinds()).toEqual(["open:sess-1:rollout.stall"]);
  });

  test("--severity overrides route: a warning kind made critical opens, a critical kind made warning is boarded", async () => {
    const overrides = new Map([
      ["rollout.stall", "critical" as const],
      ["objectstate.node_notready", "warning" as const],
    ]);
    const { sink, dispatcher } = setup({ batch: 1 }, { severityOverrides: overrides });
    expect(await dispatcher.dispatch(signal(1))).toBe("opened");
    expect(await dispatcher.dispatch(signal(2, { severity: "critical", kind: "objectstate.node_notready" }))).toBe(
      "watchboard",
    );
    expect(sink.kinds()).toEqual(["open:sess-1:rollout.stall", "open:sess-2:watchboard.digest"]);
  });
});

describe("fitting digests to --inject-max-bytes", () => {
  const long = (index: number) => signal(index, { message: `${"m".repeat(500)} ${index}` });

  test("twenty entries with long messages: one digest, messages cut until it fits", async () => {
    const { sink, dispatcher } = setup({ batch: 20 });
    for (let index = 1; index <= 20; index++) await dispatcher.dispatch(long(index));
    expect(sink.kinds()).toEqual(["open:sess-1:watchboard.digest"]);
    const digest = sink.calls[0]?.payload as { entries: Array<{ message?: string }> };
    expect(digest.entries).toHaveLength(20);
    expect(envelopeBytes(digest)).toBeLessThanOrEqual(8192);
    expect(digest.entries[0]?.message?.length ?? 0).toBeLessThan(500);
  });

  test("a batch too big even without messages is split into digests of the same board; every entry once", async () => {
    const { sink, dispatcher, watchboard } = setup({ batch: 10, injectMaxBytes: 2000 });
    for (let index = 1; index <= 10; index++) await dispatcher.dispatch(long(index));
    expect(watchboard?.buffered).toBe(0);
    const digests = sink.calls.map((call) => call.payload as { entries: Array<{ uid: string; message?: string }> });
    expect(digests.length).toBeGreaterThan(1);
    expect(new Set(sink.calls.map((call) => call.id))).toEqual(new Set(["sess-1"]));
    for (const digest of digests) expect(envelopeBytes(digest)).toBeLessThanOrEqual(2000);
    expect(digests.flatMap((digest) => digest.entries.map((entry) => entry.uid))).toEqual(
      Array.from({ length: 10 }, (_, index) => `uid-${index + 1}`),
    );
    expect(digests[0]?.entries[0]?.message).toBeUndefined();
  });
});

describe("the watchboard's pure parts", () => {
  test("due by batch or by the oldest entry's age; the tick is a quarter of the flush age within [1 s, 5 s]", () => {
    const buffer = new BoardBuffer({ cluster: "c", batch: 2, flushMs: 10_000, rotate: 3 });
    expect(buffer.due(clock)).toBe(false);
    buffer.add(entryOf(signal(1), "k1", "fp", clock));
    expect(buffer.due(clock + 9_999)).toBe(false);
    expect(buffer.due(clock + 10_000)).toBe(true);
    buffer.add(entryOf(signal(2), "k2", "fp", clock + 5_000));
    expect(buffer.due(clock)).toBe(true);
    expect(buffer.take().map((entry) => entry.key)).toEqual(["k1", "k2"]);
    expect([tickPeriodMs(1000), tickPeriodMs(8000), tickPeriodMs(60_000)]).toEqual([1000, 2000, 5000]);
    const small = new BoardBuffer({ cluster: "c", batch: 5, flushMs: 10_000, rotate: 3 }, 2);
    expect(small.add(entryOf(signal(1), "k1", "fp", clock))).toBeUndefined();
    small.add(entryOf(signal(2), "k2", "fp", clock));
    expect(small.add(entryOf(signal(3), "k3", "fp", clock))?.key).toBe("k1");
    expect([small.holds("k1"), small.size]).toEqual([false, 2]);
  });

  test("a digest entry's message is masked and cut to 512 bytes", () => {
    const message = `auth Bearer abcdefghijklmnopqrstuv ${"x".repeat(2000)}`;
    const entry = entryOf(signal(1, { message }), "k", "fp", clock);
    expect(new TextEncoder().encode(entry.message).length).toBeLessThanOrEqual(512);
    expect(entry.message).not.toContain("abcdefghijklmnop");
    expect(entry.message).toEndWith("... [truncated by watcher]");
  });

  test("the board state opens, appends, then rotates after the rotate count", () => {
    const state = new BoardState(2);
    expect(state.nextStep()).toBe("open");
    state.opened("s1");
    expect([state.nextStep(), state.nextDigest()]).toEqual(["append", { generation: 1, sequence: 2 }]);
    state.appended();
    expect([state.nextStep(), state.nextDigest()]).toEqual(["rotate", { generation: 2, sequence: 1 }]);
  });
});

describe("triage.regressed", () => {
  /** Opens uid-1's incident, resolves it after `lastedMs`, and returns the dispatcher. */
  async function resolvedIncident(lastedMs: number) {
    let ready = false;
    const opened = clock;
    const routed = setup({ batch: 5 }, { regressFactor: 3 }, () =>
      ready ? { cleared: true, stableSince: opened } : { cleared: false },
    );
    const crash = signal(1, { kind: "cluster-event", reason: "BackOff", severity: "critical", kindOfObject: "Pod" });
    expect(await routed.dispatcher.dispatch(crash)).toBe("opened");
    ready = true;
    await routed.dispatcher.sweepRecovery();
    clock += lastedMs;
    await routed.dispatcher.sweepRecovery();
    expect(routed.sink.kinds()).toEqual(["open:sess-1:cluster-event", "append:sess-1:resolved"]);
    return { ...routed, crash };
  }

  test("a recurrence within factor x the incident's duration after resolved opens with triage.regressed, once", async () => {
    const { sink, dispatcher, crash, rows, metrics } = await resolvedIncident(600_000);
    const resolvedAt = clock;
    clock += 1_200_000;
    const recurrence = { ...crash, firstSeen: clock, lastSeen: clock };
    expect(await dispatcher.dispatch(recurrence)).toBe("regressed");
    expect(sink.kinds()).toEqual([
      "open:sess-1:cluster-event",
      "append:sess-1:resolved",
      "open:sess-2:triage.regressed",
    ]);
    expect(sink.calls[2]?.payload).toMatchObject({
      kind: "triage.regressed",
      signal_kind: "cluster-event",
      reason: "BackOff",
      uid: "uid-1",
      triage_status: "resolved",
      triage_session: "sess-1",
      baseline_count: 1,
      count: 1,
      factor: 3,
      resolved_at: rfc3339(resolvedAt),
      fingerprint: expect.stringMatching(/^sha256:/),
    });
    expect(String(sink.calls[2]?.payload.message)).toContain("resolved incident regressed");
    expect(rows.at(-1)).toMatchObject({ route: "regressed", sessionId: "sess-2" });
    expect(metrics.render()).toContain('watcher_triage_regressed_total{cluster="prod"} 1');
    clock += 1_200_000;
    expect(await dispatcher.dispatch({ ...crash, firstSeen: clock, lastSeen: clock })).toBe("opened");
  });

  test("a recurrence past factor x the duration is a plain new incident", async () => {
    const { sink, dispatcher, crash } = await resolvedIncident(300_000);
    clock += 3 * 300_000 + 1;
    expect(await dispatcher.dispatch({ ...crash, firstSeen: clock, lastSeen: clock })).toBe("opened");
    expect(sink.kinds().at(-1)).toBe("open:sess-2:cluster-event");
  });

  test("the memory is bounded and forgets a reverted incident", () => {
    const memory = new RegressionMemory(3, 2);
    const resolution = {
      sessionId: "s",
      incident: { namespace: "n", kind_of_object: "Pod", name: "p", fingerprint: "f", cluster: "c" },
      firstSeen: 0,
      resolvedAt: 1000,
      count: 1,
    };
    for (const key of ["a", "b", "c"]) memory.remember(key, resolution);
    expect(memory.size).toBe(2);
    expect(memory.take("a", 1500)).toBeUndefined();
    memory.forget("b");
    expect(memory.take("b", 1500)).toBeUndefined();
    expect(memory.take("c", 4000)).toEqual(resolution);
    memory.remember("d", resolution);
    memory.sweep(4001);
    expect(memory.size).toBe(0);
  });
});

describe("family.member", () => {
  test("another source family joining a bound incident: one family.member per family per window, then suppressed", async () => {
    const { sink, dispatcher, rows, metrics } = setup({ batch: 5 });
    const crash = signal(1, { kind: "cluster-event", reason: "BackOff", severity: "critical", kindOfObject: "Pod" });
    expect(await dispatcher.dispatch(crash)).toBe("opened");
    const burst = signal(1, { kind: "objectstate.restart_burst", reason: "restart_burst", kindOfObject: "Pod" });
    clock += 1000;
    expect(await dispatcher.dispatch({ ...burst, lastSeen: clock })).toBe("family-member");
    clock += 1000;
    expect(await dispatcher.dispatch({ ...burst, lastSeen: clock })).toBe("deduped");
    clock += 1000;
    expect(await dispatcher.dispatch({ ...crash, lastSeen: clock })).toBe("deduped");
    expect(sink.kinds()).toEqual(["open:sess-1:cluster-event", "append:sess-1:family.member"]);
    expect(sink.calls[1]?.payload).toMatchObject({
      kind: "family.member",
      member_kind: "objectstate.restart_burst",
      reason: "restart_burst",
      severity: "warning",
      uid: "uid-1",
      family: "CrashLoopBackOff",
      opened_by: "cluster-event",
      cluster: "prod",
      session_id: "sess-1",
      fingerprint: expect.stringMatching(/^sha256:/),
      design_ref: "docs/watcher-pipeline.md#family-members",
    });
    expect(rows.filter((row) => row.route === "followup")).toHaveLength(1);
    expect(metrics.render()).toContain('watcher_cross_source_followups_total{cluster="prod",source="objectstate"} 1');
  });
});

describe("blast-radius reattachment", () => {
  const onNode = (signal: Signal): Ancestor[] => [
    { kind: "Node", namespace: "", name: signal.node ?? "" },
    { kind: "Namespace", namespace: "", name: signal.namespace },
  ];

  test("a warning under a critical incident's node joins its session once per source family; others go to the board", async () => {
    const { sink, dispatcher, watchboard, metrics, dedup } = setup({ batch: 5 }, {}, undefined, onNode);
    const notReady = signal(0, { kind: "objectstate.node_notready", severity: "critical", node: "n1" });
    expect(await dispatcher.dispatch(notReady)).toBe("opened");
    expect(await dispatcher.dispatch(signal(1, { node: "n1" }))).toBe("reattached");
    expect(await dispatcher.dispatch(signal(2, { node: "n1" }))).toBe("watchboard");
    const pressure = signal(3, { kind: "capacity.pending", reason: "pending", node: "n1" });
    expect(await dispatcher.dispatch(pressure)).toBe("reattached");
    expect(await dispatcher.dispatch(signal(4, { node: "n2", kind: "workload.job_failed" }))).toBe("watchboard");
    // A shared namespace alone joins nothing.
    expect(await dispatcher.dispatch(signal(5, { node: "n9", kind: "expiry.warning" }))).toBe("watchboard");
    expect(sink.kinds()).toEqual([
      "open:sess-1:objectstate.node_notready",
      "append:sess-1:family.member",
      "append:sess-1:family.member",
    ]);
    expect(sink.calls[1]?.payload).toMatchObject({
      kind: "family.member",
      member_kind: "rollout.stall",
      family: "Node//n1",
      opened_by: "rollout",
      session_id: "sess-1",
    });
    expect(String(sink.calls[1]?.payload.message)).toStartWith(
      "blast-radius join: rollout.stall (rollout_stall, severity=warning, count=1) shares the ancestor Node//n1",
    );
    expect(dedup.get("uid-1|rollout_stall")?.sessionId).toBe("sess-1");
    clock += 1000;
    expect(await dispatcher.dispatch(signal(1, { node: "n1", lastSeen: clock }))).toBe("deduped");
    expect(watchboard?.buffered).toBe(3);
    expect(metrics.render()).toContain('watcher_watchboard_reattached_total{cluster="prod",kind="rollout.stall"} 1');
  });
});

test("the watchboard flags' defaults reach the config without being set: batch 5, flush 1m, rotate 200; regress factor 3", () => {
  const config = watcherConfigFromArgv(["--dry-run", "--kubeconfig=/nonexistent", "--cluster-name=c"]);
  if (!config.ok) throw new Error(config.error);
  expect(config.value.watchboard).toEqual({ batch: 5, flushMs: 60_000, rotate: 200 });
  expect(config.value.triageRegressFactor).toBe(3);
  const set = watcherConfigFromArgv([
    "--dry-run",
    "--kubeconfig=/nonexistent",
    "--cluster-name=c",
    "--watchboard-batch=20",
    "--watchboard-flush=2s",
    "--watchboard-rotate=3",
  ]);
  if (!set.ok) throw new Error(set.error);
  expect(set.value.watchboard).toEqual({ batch: 20, flushMs: 2000, rotate: 3 });
});
