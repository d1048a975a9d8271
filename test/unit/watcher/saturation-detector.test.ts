/**
 * The saturation detector (D389-D390): least squares over the window, a forecast only with 8
 * samples spanning half the window, a warning when the time left is under --saturation-warn and
 * not before, one critical under 15m, latched (never back down while open), forgotten beyond 2 ×
 * warn or when the series stops growing; CPU against the limit in nanocores, PVCs against their
 * capacity from the nodes' stats; pods and claims gone forget their series; samples are bounded.
 */
import { describe, expect, test } from "bun:test";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { linearFit } from "../../../src/watcher/core/sources/linear-fit.ts";
import { formatBytes, parseQuantity } from "../../../src/watcher/core/quantity.ts";
import {
  type NodeStats,
  SATURATION_DEFAULTS,
  SaturationDetector,
  type SaturationSettings,
} from "../../../src/watcher/core/sources/saturation-detector.ts";
import { sourceSettings } from "../../../src/watcher/sources/source-registry.ts";

const MIN = 60_000;
const MI = 2 ** 20;
const T0 = Date.parse("2026-07-25T10:00:00Z");

function settings(extra: Partial<SaturationSettings> = {}): SaturationSettings {
  return { ...SATURATION_DEFAULTS, windowMs: 20 * MIN, ...extra };
}

function podsList(limits: { memory?: string; cpu?: string } = { memory: "1Gi" }, present = true) {
  return {
    items: present
      ? [
          {
            metadata: {
              uid: "u1",
              name: "web-1",
              namespace: "prod",
              ownerReferences: [{ kind: "ReplicaSet", name: "web-7d", uid: "rs", controller: true }],
            },
            spec: {
              nodeName: "node-1",
              containers: [
                { name: "app", resources: { limits } },
                { name: "sidecar", resources: {} },
              ],
            },
          },
        ]
      : [],
  };
}

function metrics(at: number, usage: { memory?: string; cpu?: string }) {
  return {
    items: [
      {
        metadata: { name: "web-1", namespace: "prod" },
        timestamp: new Date(at).toISOString(),
        window: "30s",
        containers: [
          { name: "app", usage },
          { name: "sidecar", usage: { memory: "10Mi", cpu: "5m" } },
        ],
      },
    ],
  };
}

/** Feeds memory samples `value(i)` Mi at T0 + i·step; the signals of each sample by index. */
function feed(detector: SaturationDetector, from: number, to: number, value: (i: number) => number, step = MIN) {
  const fired: { i: number; severity: string; message: string }[] = [];
  for (let i = from; i <= to; i++) {
    const at = T0 + i * step;
    for (const signal of detector.polled("pod-metrics", metrics(at, { memory: `${value(i)}Mi` }), at))
      fired.push({ i, severity: signal.severity, message: signal.message });
  }
  return fired;
}

describe("least squares and quantities", () => {
  test("the fit recovers a line's slope and value; fewer than 2 points or one instant has none", () => {
    const points = [0, 1, 2, 3].map((i) => ({ at: T0 + i * MIN, value: 100 + 5 * i }));
    const fit = linearFit(points);
    expect(fit?.slope).toBeCloseTo(5 / MIN, 12);
    expect(fit?.valueAt(T0 + 10 * MIN)).toBeCloseTo(150, 6);
    const noisy = linearFit([
      { at: 0, value: 1 },
      { at: 1, value: 3 },
      { at: 2, value: 2 },
      { at: 3, value: 4 },
    ]);
    expect(noisy?.slope).toBeCloseTo(0.8, 9);
    expect(linearFit([{ at: 1, value: 1 }])).toBeUndefined();
    expect(
      linearFit([
        { at: 1, value: 1 },
        { at: 1, value: 2 },
      ]),
    ).toBeUndefined();
  });

  test("quantities in their suffixes; anything else is unreadable", () => {
    expect(parseQuantity("250m")).toBeCloseTo(0.25, 9);
    expect(parseQuantity("123456789n")).toBeCloseTo(0.123456789, 12);
    expect(parseQuantity("2")).toBe(2);
    expect(parseQuantity("900Mi")).toBe(900 * MI);
    expect(parseQuantity("1Gi")).toBe(1024 * MI);
    expect(parseQuantity("12Ki")).toBe(12 * 1024);
    expect(parseQuantity("2G")).toBe(2e9);
    expect(parseQuantity("1e3")).toBe(1000);
    expect(parseQuantity("1.5Gi")).toBe(1.5 * 1024 * MI);
    for (const bad of ["", "Mi", "12 Mi", "1x", "--1", undefined, {}]) expect(parseQuantity(bad)).toBeUndefined();
    expect(formatBytes(980 * MI)).toBe("980.0MiB");
    expect(formatBytes(1024 * MI)).toBe("1.0GiB");
  });
});

describe("saturation forecast", () => {
  test("a warning once 8 samples span half the window and the time left is under --saturation-warn, not before", () => {
    const detector = new SaturationDetector(settings());
    expect(detector.polled("pods", podsList(), T0)).toEqual([]);
    // 10Mi/min towards 1Gi: at i=10 (11 samples over 10m, half the 20m window) 524Mi are left: 52.4m.
    const fired = feed(detector, 0, 10, (i) => 400 + 10 * i);
    expect(fired.map((one) => [one.i, one.severity])).toEqual([[10, "warning"]]);
    const [signal] = detector.polled("pod-metrics", metrics(T0 + 11 * MIN, { memory: "510Mi" }), T0 + 11 * MIN);
    expect(signal).toBeUndefined();
    expect(fired[0]?.message).toBe(
      "memory of container app in pod prod/web-1: 500.0MiB of its 1.0GiB limit, growing 10.0MiB/min — reached in ~52m at the observed trend (ETA 2026-07-25T11:02:24Z; linear-20m-window: 11 samples over 10m)",
    );
  });

  test("the signal's identity: the pod, its container, uid <podUID>/<container>, node and owner", () => {
    const detector = new SaturationDetector(settings());
    detector.polled("pods", podsList(), T0);
    let signal: unknown;
    for (let i = 0; i <= 10 && !signal; i++) {
      const at = T0 + i * MIN;
      signal = detector.polled("pod-metrics", metrics(at, { memory: `${400 + 10 * i}Mi` }), at)[0];
    }
    expect(signal).toMatchObject({
      kind: "saturation.forecast",
      reason: "forecast_memory",
      namespace: "prod",
      kindOfObject: "Pod",
      name: "web-1",
      container: "app",
      uid: "u1/app",
      node: "node-1",
      controllerRef: "ReplicaSet/web-7d",
      type: "",
      eventCount: 1,
      firstSeen: T0 + 10 * MIN,
      lastSeen: T0 + 10 * MIN,
      // D417: the ETA from the newest sample (500Mi growing 10Mi/min: 52.4m to the 1Gi limit).
      forecast: { eta: T0 + 10 * MIN + 52.4 * MIN, confidenceBasis: "linear-20m-window" },
    });
  });

  test("the warning fires when the time left crosses --saturation-warn, at that sample", () => {
    const detector = new SaturationDetector(settings());
    detector.polled("pods", podsList(), T0);
    // Left = (1024 − v)/10 minutes: 63.4m at i=10, 61.4 at 12, 59.4 at 14.
    const fired = feed(detector, 0, 16, (i) => 290 + 10 * i);
    expect(fired.map((one) => [one.i, one.severity])).toEqual([[14, "warning"]]);
  });

  test("under 8 samples, or spanning under half the window, no forecast however close the limit", () => {
    // 2.5-minute samples, 20m window: half the window is spanned at i=4 but 8 samples only at i=7
    // (12.5m left then: critical).
    const few = new SaturationDetector(settings());
    few.polled("pods", podsList(), T0);
    const fired = feed(few, 0, 7, (i) => 1000 + 2 * i, 2.5 * MIN);
    expect(fired.map((one) => [one.i, one.severity])).toEqual([[7, "critical"]]);
    // 8 samples within 30s of a 20m window: too short a span.
    const short = new SaturationDetector(settings());
    short.polled("pods", podsList(), T0);
    expect(feed(short, 0, 20, (i) => 1000 + i, 1000)).toEqual([]);
  });

  test("severity latches: one warning, one critical, nothing back down while open; beyond 2 × warn it clears and may fire again", () => {
    const detector = new SaturationDetector(settings());
    detector.polled("pods", podsList(), T0);
    const value = (i: number) => 400 + 10 * i;
    // Critical when under 15m: 1024 − (400 + 10i) < 150 from i=48.
    expect(feed(detector, 0, 50, value).map((one) => [one.i, one.severity])).toEqual([
      [10, "warning"],
      [48, "critical"],
    ]);
    const withLimit = (memory: string, i: number) => {
      detector.polled("pods", podsList({ memory }), T0 + i * MIN - 1);
      return feed(detector, i, i, value);
    };
    // 1.5Gi: 63.6m left, between warn and 2 × warn: still open, nothing sent.
    expect(withLimit("1536Mi", 51)).toEqual([]);
    // 1.2Gi: 30m left, a warning's range: latched at critical, nothing sent.
    expect(withLimit("1228Mi", 52)).toEqual([]);
    // Back under 15m: still the same open critical, nothing sent.
    expect(withLimit("1Gi", 53)).toEqual([]);
    // 3Gi: far beyond 2 × warn, forgotten; back to 1Gi, it pages again (critical at once).
    expect(withLimit("3Gi", 54)).toEqual([]);
    expect(withLimit("1Gi", 55).map((one) => one.severity)).toEqual(["critical"]);
  });

  test("a series that stops growing is forgotten and pages again when it grows", () => {
    const detector = new SaturationDetector(settings());
    detector.polled("pods", podsList(), T0);
    expect(feed(detector, 0, 10, (i) => 400 + 10 * i)).toHaveLength(1);
    // Flat for a whole window: the slope reaches 0 (falls in fact), forgotten.
    expect(feed(detector, 11, 40, () => 500)).toEqual([]);
    expect(feed(detector, 41, 60, (i) => 500 + 10 * (i - 40)).map((one) => one.severity)).toEqual(["warning"]);
  });

  test("CPU against its limit in cores, usage in nanocores", () => {
    const detector = new SaturationDetector(settings());
    detector.polled("pods", podsList({ cpu: "1" }), T0);
    const fired: string[] = [];
    for (let i = 0; i <= 12; i++) {
      const at = T0 + i * MIN;
      // 10 millicores a minute from 500m: 40m left at i=10.
      const nano = (0.5 + 0.01 * i) * 1e9;
      for (const signal of detector.polled("pod-metrics", metrics(at, { cpu: `${nano}n` }), at))
        fired.push(`${signal.reason} ${signal.severity} ${signal.message.split(",")[0]}`);
    }
    expect(fired).toEqual(["forecast_cpu warning CPU of container app in pod prod/web-1: 600m of its 1000m limit"]);
  });

  test("a metrics answer seen twice (same timestamp) is one sample; without a limit, no series", () => {
    const detector = new SaturationDetector(settings());
    detector.polled("pods", podsList(), T0);
    for (let i = 0; i < 5; i++) detector.polled("pod-metrics", metrics(T0, { memory: `${500 + i}Mi` }), T0 + i);
    expect(detector.size).toEqual({ pods: 1, series: 1, samples: 1 });
  });

  test("bounded: samples older than the window fall out, close ones fold, a deleted pod's series is dropped", () => {
    const detector = new SaturationDetector(settings({ maxSamples: 40 }));
    detector.polled("pods", podsList(), T0);
    feed(detector, 0, 100, (i) => 100 + i);
    // 20m window of 1-minute samples: 21 kept.
    expect(detector.size.samples).toBe(21);
    // 1-second samples in a 20m window with at most 40: spaced 30s (the newest folds), so at most
    // 42 however many arrive.
    feed(detector, 6000, 9000, (i) => 100 + i / 100, 1000);
    expect(detector.size.samples).toBeLessThanOrEqual(42);
    expect(detector.size.samples).toBeGreaterThan(30);
    detector.polled("pods", podsList({ memory: "1Gi" }, false), T0 + 9001 * 1000);
    expect(detector.size).toEqual({ pods: 0, series: 0, samples: 0 });
  });

  test("a series with no sample for a whole window is dropped", () => {
    const detector = new SaturationDetector(settings());
    detector.polled("pods", podsList(), T0);
    feed(detector, 0, 3, (i) => 100 + i);
    expect(detector.size.series).toBe(1);
    detector.polled("pod-metrics", { items: [] }, T0 + 3 * MIN + 20 * MIN + 1);
    expect(detector.size.series).toBe(0);
  });
});

function stats(at: number, usedMi: number, claim = "data"): NodeStats {
  return {
    node: "node-1",
    summary: {
      node: { nodeName: "node-1" },
      pods: [
        {
          podRef: { name: "db-0", namespace: "prod", uid: "p1" },
          volume: [
            { name: "tmp", usedBytes: 5, capacityBytes: 10 },
            {
              name: "data",
              time: new Date(at).toISOString(),
              usedBytes: usedMi * MI,
              capacityBytes: 1024 * MI,
              availableBytes: (1024 - usedMi) * MI,
              pvcRef: { name: claim, namespace: "prod" },
            },
          ],
        },
      ],
    },
  };
}

describe("PVC forecast", () => {
  test("used bytes against capacity from the stats summary: uid pvc:<ns>/<claim>, the node named", () => {
    const detector = new SaturationDetector(settings());
    const fired = [];
    for (let i = 0; i <= 10; i++) {
      const at = T0 + i * MIN;
      fired.push(...detector.polled("node-stats", { nodes: [stats(at, 400 + 10 * i)] }, at));
    }
    expect(fired).toHaveLength(1);
    expect(fired[0]).toMatchObject({
      kind: "saturation.forecast",
      reason: "forecast_pvc",
      kindOfObject: "PersistentVolumeClaim",
      namespace: "prod",
      name: "data",
      uid: "pvc:prod/data",
      node: "node-1",
      severity: "warning",
    });
    expect(fired[0]?.container).toBeUndefined();
    expect(fired[0]?.message).toStartWith("PVC prod/data (node node-1): 500.0MiB of its 1.0GiB capacity, growing");
  });

  test("a claim gone from an answering node is dropped; a node that failed keeps its claims", () => {
    const detector = new SaturationDetector(settings());
    detector.polled("node-stats", { nodes: [stats(T0, 100)] }, T0);
    expect(detector.size.series).toBe(1);
    detector.polled("node-stats", { nodes: [{ node: "node-1", error: "HTTP 503" }] }, T0 + MIN);
    expect(detector.size.series).toBe(1);
    detector.polled("node-stats", undefined, T0 + 2 * MIN, "GET /api/v1/nodes: HTTP 503");
    expect(detector.size.series).toBe(1);
    detector.polled("node-stats", { nodes: [stats(T0 + 3 * MIN, 100, "other")] }, T0 + 3 * MIN);
    expect(detector.size).toMatchObject({ series: 1, samples: 1 });
  });
});

test("settings come from --saturation-interval, --saturation-warn and --saturation-window", () => {
  const parsed = watcherConfigFromArgv([
    "--dry-run",
    "--kubeconfig=/nonexistent",
    "--saturation-interval=5s",
    "--saturation-warn=2h",
    "--saturation-window=45m",
  ]);
  if (!parsed.ok) throw new Error(parsed.error);
  expect(sourceSettings("saturation", parsed.value)).toEqual({
    ...SATURATION_DEFAULTS,
    intervalMs: 5000,
    warnMs: 2 * 3600_000,
    windowMs: 45 * MIN,
  });
});
