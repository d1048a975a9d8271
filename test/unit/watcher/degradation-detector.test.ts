/**
 * The degradation detector (D383): a Service's ready ratio dropping by the drop (0.3) from the
 * window's start in at least 2 downward steps while still above 0 is a warning, critical at or
 * below 0.5; samples closer than 10s fold into one; a recovery clears; a pod whose readiness flips
 * 4 times in the window is one probe_flap; the first list emits nothing; deletes forget.
 */
import { expect, test } from "bun:test";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import {
  DEGRADATION_DEFAULTS,
  DEGRADATION_SPEC,
  DegradationDetector,
} from "../../../src/watcher/core/sources/degradation-detector.ts";
import { sourceSettings } from "../../../src/watcher/sources/source-registry.ts";
import { endpointSlice, MIN, pod, T0 } from "./workload-objects.ts";

const S = 1000;

function slices(detector: DegradationDetector, ready: number, at: number, initial = false) {
  return detector.observe(
    "endpointslices",
    initial ? "add" : "update",
    endpointSlice("es1", "web", ready, 10),
    at,
    initial,
  );
}

test("capacity: two steps down by 0.3 is a warning, not one step; below 0.5 one critical; the Service's UID", () => {
  const detector = new DegradationDetector(DEGRADATION_DEFAULTS);
  expect(slices(detector, 10, T0, true)).toEqual([]);
  expect(slices(detector, 7, T0 + MIN)).toEqual([]);
  const [signal, ...rest] = slices(detector, 6, T0 + 2 * MIN);
  expect(rest).toEqual([]);
  expect(signal).toMatchObject({
    kind: "degradation.capacity",
    reason: "capacity",
    uid: "web-uid",
    kindOfObject: "Service",
    name: "web",
    namespace: "shop",
    severity: "warning",
  });
  expect(slices(detector, 6, T0 + 3 * MIN)).toEqual([]);
  expect(slices(detector, 5, T0 + 4 * MIN)).toMatchObject([{ severity: "critical" }]);
  expect(slices(detector, 4, T0 + 5 * MIN)).toEqual([]);
});

test("one cut (a single step) is not a degradation; neither is a fall to 0 (endpoints_empty's)", () => {
  const detector = new DegradationDetector(DEGRADATION_DEFAULTS);
  slices(detector, 10, T0, true);
  expect(slices(detector, 4, T0 + MIN)).toEqual([]);
  expect(slices(detector, 0, T0 + 2 * MIN)).toEqual([]);
});

test("changes closer than 10s fold into one sample (one step)", () => {
  const detector = new DegradationDetector(DEGRADATION_DEFAULTS);
  slices(detector, 10, T0, true);
  expect(slices(detector, 8, T0 + MIN)).toEqual([]);
  expect(slices(detector, 6, T0 + MIN + 5 * S)).toEqual([]);
  expect(detector.size.samples).toBe(2);
  expect(slices(detector, 6, T0 + MIN + 20 * S)).toEqual([]);
});

test("a recovery clears it, so a later drop fires again; the window slides", () => {
  const detector = new DegradationDetector(DEGRADATION_DEFAULTS);
  slices(detector, 10, T0, true);
  slices(detector, 8, T0 + MIN);
  expect(slices(detector, 7, T0 + 2 * MIN)).toHaveLength(1);
  expect(slices(detector, 10, T0 + 3 * MIN)).toEqual([]);
  slices(detector, 8, T0 + 4 * MIN);
  expect(slices(detector, 7, T0 + 5 * MIN)).toHaveLength(1);
  detector.tick(T0 + 60 * MIN);
  expect(detector.size.samples).toBe(1);
  detector.observe("endpointslices", "delete", endpointSlice("es1", "web", 7, 10), T0 + 61 * MIN, false);
  expect(detector.size).toMatchObject({ slices: 0, services: 0, samples: 0 });
});

test("the ratio is summed across a Service's slices", () => {
  const detector = new DegradationDetector(DEGRADATION_DEFAULTS);
  detector.observe("endpointslices", "add", endpointSlice("a", "api", 10, 10), T0, true);
  detector.observe("endpointslices", "add", endpointSlice("b", "api", 10, 10), T0, true);
  expect(detector.observe("endpointslices", "update", endpointSlice("a", "api", 5, 10), T0 + MIN, false)).toEqual([]);
  expect(
    detector.observe("endpointslices", "update", endpointSlice("b", "api", 8, 10), T0 + 2 * MIN, false),
  ).toMatchObject([{ uid: "api-uid", severity: "warning" }]);
});

test("probe_flap: 4 readiness flips in the window is one warning; flips that age out clear it", () => {
  const detector = new DegradationDetector(DEGRADATION_DEFAULTS);
  const owner: [string, string, string] = ["ReplicaSet", "web-1", "rs1"];
  const flip = (ready: boolean, at: number) =>
    detector.observe("pods", "update", pod("p1", { ready, owner }), at, false);
  expect(detector.observe("pods", "add", pod("p1", { ready: true, owner }), T0, true)).toEqual([]);
  expect(flip(false, T0 + MIN)).toEqual([]);
  expect(flip(true, T0 + 2 * MIN)).toEqual([]);
  expect(flip(false, T0 + 3 * MIN)).toEqual([]);
  expect(flip(true, T0 + 4 * MIN)).toMatchObject([
    {
      kind: "degradation.probe_flap",
      reason: "probe_flap",
      uid: "p1",
      kindOfObject: "Pod",
      severity: "warning",
      controllerRef: "ReplicaSet/web-1",
    },
  ]);
  expect(flip(false, T0 + 5 * MIN)).toEqual([]);
  detector.tick(T0 + 30 * MIN);
  expect(flip(true, T0 + 31 * MIN)).toEqual([]);
  flip(false, T0 + 32 * MIN);
  flip(true, T0 + 33 * MIN);
  expect(flip(false, T0 + 34 * MIN)).toHaveLength(1);
  detector.observe("pods", "delete", pod("p1", { ready: false }), T0, false);
  expect(detector.size.pods).toBe(0);
});

test("degradation defaults without a flag: 15m window, 0.3 drop, 2 steps, 10s apart, the reference's grants; the flags reach it", () => {
  expect(DEGRADATION_DEFAULTS).toEqual({
    windowMs: 15 * MIN,
    drop: 0.3,
    minSteps: 2,
    sampleGapMs: 10 * S,
    criticalRatio: 0.5,
    flips: 4,
  });
  expect(DEGRADATION_SPEC.required.map((check) => `${check.verb} ${check.group}/${check.resource}`)).toEqual([
    "list /pods",
    "watch /pods",
    "list discovery.k8s.io/endpointslices",
    "watch discovery.k8s.io/endpointslices",
  ]);
  const base = ["--daemon-url=http://127.0.0.1:1", "--token-env=T"];
  const plain = watcherConfigFromArgv(base);
  const flagged = watcherConfigFromArgv([...base, "--degradation-window=5m", "--degradation-drop=0.5"]);
  if (!plain.ok || !flagged.ok) throw new Error("config refused");
  expect(sourceSettings("degradation", plain.value)).toEqual(DEGRADATION_DEFAULTS);
  expect(sourceSettings("degradation", flagged.value)).toMatchObject({ windowMs: 5 * MIN, drop: 0.5 });
});
