/**
 * The storm's radius bundle through the dispatcher (D431): the opening `storm` payload carries it
 * when `--enrich` covers the storm's severity, and not when it does not, when enrichment is off
 * (no cap) or in shared mode (only per-incident sessions are enriched).
 */
import { expect, test } from "bun:test";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { DEFAULT_REASONS } from "../../../src/watcher/core/reasons.ts";
import type { Severity, Signal } from "../../../src/watcher/core/signal.ts";
import type { AppendResult, IncidentSink, OpenResult } from "../../../src/watcher/core/sink.ts";
import { Dispatcher, type DispatcherSettings } from "../../../src/watcher/dispatcher.ts";
import { WatcherMetrics } from "../../../src/watcher/watcher-metrics.ts";

class OpenedPayloads implements IncidentSink {
  readonly name = "recording";
  readonly opened: Array<Record<string, unknown>> = [];

  async open(payload: object): Promise<OpenResult> {
    this.opened.push(payload as Record<string, unknown>);
    return { id: `sess-${this.opened.length}` };
  }

  async append(): Promise<AppendResult> {
    return { ok: true };
  }
}

const SETTINGS: DispatcherSettings = {
  cluster: "prod",
  zone: "",
  mode: "per-incident",
  filter: {
    reasons: new Set(DEFAULT_REASONS),
    allowNamespaces: new Set(),
    excludeNamespaces: new Set(),
    backoffMinCount: 1,
    imagePullTransientMinCount: 1,
    unhealthyMinCount: 1,
  },
  dedupWindowMs: 300_000,
  recoveryStableForMs: 0,
  storm: { min: 3, windowMs: 60_000, mineMin: 0, mine: false },
  enrichSeverities: new Set(["critical"]),
  enrichCapBytes: 4096,
  injectMaxBytes: 8192,
  severityOverrides: new Map(),
};

function pull(index: number, severity: Severity): Signal {
  return {
    kind: "cluster-event",
    reason: "ErrImagePull",
    namespace: `team-${index}`,
    kindOfObject: "Pod",
    name: `web-${index}`,
    uid: `uid-${index}`,
    message: 'Failed to pull image "registry.example.com/web:v1": 429 Too Many Requests',
    eventCount: 3,
    firstSeen: 0,
    lastSeen: 0,
    type: "Warning",
    severity,
  };
}

/** The storm payload opened after three pulls from one registry, under these settings. */
async function stormOf(settings: Partial<DispatcherSettings>, severity: Severity = "critical") {
  const sink = new OpenedPayloads();
  const dispatcher = new Dispatcher(
    { ...SETTINGS, ...settings },
    { sink, metrics: new WatcherMetrics("prod"), logger: createLogger("error", () => {}), now: () => 0 },
  );
  for (let index = 1; index <= 3; index++) await dispatcher.dispatch(pull(index, severity));
  const storm = sink.opened.find((payload) => payload.kind === "storm");
  if (!storm) throw new Error("no storm opened");
  return storm;
}

test("a critical storm opens with its radius bundle, keyed by the registry host", async () => {
  const storm = await stormOf({});
  expect(storm).toMatchObject({ ancestor_kind: "Registry", key_source: "registry-host" });
  const bundle = (storm.enrichment as { bundle: string }).bundle;
  expect(bundle.split("\n")[0]).toEndWith(
    'ancestor="Registry registry.example.com" affected=3 affected_namespaces=3 sections=radius',
  );
});

test("no bundle for a severity --enrich does not cover, with enrichment off, or in shared mode", async () => {
  expect((await stormOf({}, "warning")).enrichment).toBeUndefined();
  expect((await stormOf({ enrichSeverities: new Set(["critical", "warning"]) }, "warning")).enrichment).toBeDefined();
  const { enrichCapBytes: _cap, ...off } = SETTINGS;
  const sink = new OpenedPayloads();
  const dispatcher = new Dispatcher(off, {
    sink,
    metrics: new WatcherMetrics("prod"),
    logger: createLogger("error", () => {}),
    now: () => 0,
  });
  for (let index = 1; index <= 3; index++) await dispatcher.dispatch(pull(index, "critical"));
  expect(sink.opened.find((payload) => payload.kind === "storm")?.enrichment).toBeUndefined();
  expect((await stormOf({ mode: "shared" })).enrichment).toBeUndefined();
});
