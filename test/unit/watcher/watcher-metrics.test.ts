/**
 * The watcher's series (docs/watcher-pipeline.md#metrics): the 100-distinct-reasons label cap
 * (D433) on every series with a `reason` label, the enrichment series and its histogram (D434),
 * `watcher_sink_info` (D435), and `watcher_info_dropped_total` counted by the dispatcher when no
 * store keeps an info signal.
 */
import { describe, expect, test } from "bun:test";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { MetricsRegistry } from "../../../src/telemetry/metrics.ts";
import { REASON_LABEL_CAP, REASON_OVERFLOW, ReasonCap } from "../../../src/watcher/core/reason-cap.ts";
import { DEFAULT_REASONS } from "../../../src/watcher/core/reasons.ts";
import type { Signal } from "../../../src/watcher/core/signal.ts";
import type { IncidentSink } from "../../../src/watcher/core/sink.ts";
import { Dispatcher } from "../../../src/watcher/dispatcher.ts";
import { enrichmentReport } from "../../../src/watcher/enricher.ts";
import { ENRICHMENT_BYTE_BUCKETS, WatcherMetrics } from "../../../src/watcher/watcher-metrics.ts";

describe("the reason label cap (D433)", () => {
  test("the first 100 distinct reasons keep their value; every later new one is counted as other", () => {
    const cap = new ReasonCap();
    expect(REASON_LABEL_CAP).toBe(100);
    expect(REASON_OVERFLOW).toBe("other");
    for (let i = 0; i < 100; i++) expect(cap.label(`R${i}`)).toBe(`R${i}`);
    expect(cap.label("R100")).toBe("other");
    expect(cap.label("R101")).toBe("other");
    // A reason kept before the cap filled keeps its value after it.
    expect(cap.label("R0")).toBe("R0");
    expect(cap.label("R99")).toBe("R99");
    expect(cap.size).toBe(100);
  });

  test("one cap per cluster's metrics, shared by every series with a reason label; other labels untouched", () => {
    const metrics = new WatcherMetrics("prod");
    for (let i = 0; i < 100; i++) metrics.eventsSeen({ reason: `R${i}`, namespace: "shop" });
    metrics.eventsSeen({ reason: "Late1", namespace: "shop" });
    metrics.eventsSeen({ reason: "Late2", namespace: "shop" });
    metrics.injectErrors({ reason: "Late3", http_code: "inject" });
    metrics.eventsDeduped({ reason: "R7", namespace: "shop" });
    const text = metrics.render();
    expect(text).toContain('watcher_events_seen_total{cluster="prod",namespace="shop",reason="other"} 2');
    expect(text).toContain('watcher_events_seen_total{cluster="prod",namespace="shop",reason="R99"} 1');
    expect(text).toContain('watcher_inject_errors_total{cluster="prod",http_code="inject",reason="other"} 1');
    expect(text).toContain('watcher_events_deduped_total{cluster="prod",namespace="shop",reason="R7"} 1');
    expect(text).not.toContain("Late");
    const reasons = new Set([...text.matchAll(/reason="([^"]*)"/g)].map((match) => match[1]));
    expect(reasons.size).toBe(101);
    // Another cluster's metrics have their own cap.
    const other = new WatcherMetrics("dr");
    other.eventsSeen({ reason: "Late1", namespace: "shop" });
    expect(other.render()).toContain('reason="Late1"');
  });
});

describe("the enrichment series (D434)", () => {
  test("outcome ok, partial or failed; stages that erred; truncated when the cap dropped a section", () => {
    const bundle = { bundle: "x".repeat(700), dropped: [] };
    expect(enrichmentReport(bundle, 2, [])).toEqual({ outcome: "ok", bytes: 700, truncated: false, failedStages: [] });
    expect(enrichmentReport({ ...bundle, dropped: ["logs"] }, 2, [{ stage: "delta" }])).toEqual({
      outcome: "partial",
      bytes: 700,
      truncated: true,
      failedStages: ["delta"],
    });
    expect(enrichmentReport(bundle, 0, [{ stage: "resolve" }, { stage: "logs" }]).outcome).toBe("failed");
    // Nothing abnormal to gather and nothing erred is ok, not failed.
    expect(enrichmentReport(bundle, 0, []).outcome).toBe("ok");
  });

  test("one report counts the outcome, the bytes in 512 B x 2^n buckets, truncation and each failed stage", () => {
    expect(ENRICHMENT_BYTE_BUCKETS).toEqual([512, 1024, 2048, 4096, 8192, 16384, 32768, 65536]);
    const metrics = new WatcherMetrics("prod");
    metrics.enrichment({ outcome: "partial", bytes: 3000, truncated: true, failedStages: ["delta", "logs"] });
    metrics.enrichment({ outcome: "ok", bytes: 100, truncated: false, failedStages: [] });
    const text = metrics.render();
    expect(text).toContain('watcher_enrichments_total{cluster="prod",outcome="partial"} 1');
    expect(text).toContain('watcher_enrichments_total{cluster="prod",outcome="ok"} 1');
    expect(text).toContain('watcher_enrichment_truncated_total{cluster="prod"} 1');
    expect(text).toContain('watcher_enrichment_failures_total{cluster="prod",stage="delta"} 1');
    expect(text).toContain('watcher_enrichment_failures_total{cluster="prod",stage="logs"} 1');
    expect(text).toContain("# TYPE watcher_enrichment_bytes histogram");
    expect(text).toContain('watcher_enrichment_bytes_bucket{cluster="prod",le="512"} 1');
    expect(text).toContain('watcher_enrichment_bytes_bucket{cluster="prod",le="2048"} 1');
    expect(text).toContain('watcher_enrichment_bytes_bucket{cluster="prod",le="4096"} 2');
    expect(text).toContain('watcher_enrichment_bytes_bucket{cluster="prod",le="65536"} 2');
    expect(text).toContain('watcher_enrichment_bytes_bucket{cluster="prod",le="+Inf"} 2');
    expect(text).toContain('watcher_enrichment_bytes_sum{cluster="prod"} 3100');
    expect(text).toContain('watcher_enrichment_bytes_count{cluster="prod"} 2');
  });

  test("a histogram of the shared registry counts a value above every bound only in +Inf", () => {
    const registry = new MetricsRegistry();
    const observe = registry.histogram("h", "help", [1, 2]);
    observe({}, 5);
    expect(registry.render()).toContain('h_bucket{le="2"} 0\nh_bucket{le="+Inf"} 1\nh_sum 5\nh_count 1');
  });
});

test("watcher_sink_info names the sink with value 1 (D435)", () => {
  const metrics = new WatcherMetrics("prod");
  metrics.sinkInfo("webhook");
  expect(metrics.render()).toContain('watcher_sink_info{cluster="prod",sink="webhook"} 1');
});

test("an info signal with no store to keep it is counted in watcher_info_dropped_total by kind; with a store it is not", async () => {
  const now = Date.parse("2026-07-24T10:00:00Z");
  const sink: IncidentSink = {
    name: "none",
    open: async () => ({ error: "unexpected" }),
    append: async () => ({ ok: false, error: "unexpected" }),
  };
  const settings = {
    cluster: "prod",
    zone: "",
    mode: "per-incident" as const,
    filter: {
      reasons: new Set(DEFAULT_REASONS),
      allowNamespaces: new Set<string>(),
      excludeNamespaces: new Set<string>(),
      backoffMinCount: 1,
      imagePullTransientMinCount: 3,
      unhealthyMinCount: 3,
    },
    dedupWindowMs: 300_000,
    recoveryStableForMs: 0,
    enrichSeverities: new Set<"critical">(["critical"]),
    injectMaxBytes: 8192,
    severityOverrides: new Map(),
  };
  const scaleUp: Signal = {
    kind: "capacity.scaleup",
    reason: "scaleup",
    namespace: "shop",
    kindOfObject: "Pod",
    name: "web-1",
    uid: "uid-1",
    message: "scaled up",
    eventCount: 1,
    firstSeen: now,
    lastSeen: now,
    type: "",
    severity: "info",
  };
  const logger = createLogger("error", () => {});
  const bare = new WatcherMetrics("prod");
  const dropping = new Dispatcher(settings, { sink, metrics: bare, logger, now: () => now });
  expect(await dropping.dispatch(scaleUp)).toBe("info-stored");
  expect(await dropping.dispatch({ ...scaleUp, lastSeen: now + 1 })).toBe("info-stored");
  expect(bare.render()).toContain('watcher_info_dropped_total{cluster="prod",kind="capacity.scaleup"} 2');
  const stored = new WatcherMetrics("prod");
  const keeping = new Dispatcher(settings, { sink, metrics: stored, logger, now: () => now, record: () => {} });
  expect(await keeping.dispatch(scaleUp)).toBe("info-stored");
  expect(stored.render()).not.toContain("watcher_info_dropped_total{");
});
