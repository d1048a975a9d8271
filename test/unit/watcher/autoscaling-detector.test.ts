/**
 * The autoscaling detector (D382): pinned at maxReplicas with ScalingLimited=True/TooManyReplicas
 * is a warning at 10m and one critical at 30m; ScalingActive=False with FailedGet* a warning at
 * 15m; durations from lastTransitionTime; an ended condition is forgotten and pages again.
 */
import { expect, test } from "bun:test";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import {
  AUTOSCALING_DEFAULTS,
  AUTOSCALING_SPEC,
  AutoscalingDetector,
} from "../../../src/watcher/core/sources/autoscaling-detector.ts";
import { sourceSettings } from "../../../src/watcher/sources/source-registry.ts";
import { hpa, MIN, T0 } from "./workload-objects.ts";

const pinned = (since: number, current = 10) =>
  hpa("h1", { current, max: 10, limited: ["True", "TooManyReplicas", since] });

test("hpa_pinned: a warning at 10m, one critical at 30m, not before; the first list only fills state", () => {
  const detector = new AutoscalingDetector(AUTOSCALING_DEFAULTS);
  expect(detector.observe("horizontalpodautoscalers", "add", pinned(T0), T0, true)).toEqual([]);
  expect(detector.tick(T0 + 10 * MIN - 1)).toEqual([]);
  expect(detector.tick(T0 + 10 * MIN)).toMatchObject([
    {
      kind: "autoscaling.hpa_pinned",
      reason: "hpa_pinned",
      uid: "h1",
      kindOfObject: "HorizontalPodAutoscaler",
      severity: "warning",
    },
  ]);
  detector.observe("horizontalpodautoscalers", "update", pinned(T0), T0 + 20 * MIN, false);
  expect(detector.tick(T0 + 30 * MIN - 1)).toEqual([]);
  expect(detector.tick(T0 + 30 * MIN)).toMatchObject([{ reason: "hpa_pinned", severity: "critical" }]);
  expect(detector.tick(T0 + 90 * MIN)).toEqual([]);
});

test("below maxReplicas, or limited for another reason, is not pinned; an ended pin is forgotten and pages again", () => {
  const detector = new AutoscalingDetector(AUTOSCALING_DEFAULTS);
  detector.observe("horizontalpodautoscalers", "add", pinned(T0, 9), T0, true);
  detector.observe(
    "horizontalpodautoscalers",
    "add",
    hpa("h2", { current: 10, max: 10, limited: ["True", "TooFewReplicas", T0] }),
    T0,
    true,
  );
  expect(detector.size).toBe(0);
  detector.observe("horizontalpodautoscalers", "update", pinned(T0), T0, false);
  expect(detector.tick(T0 + 10 * MIN)).toHaveLength(1);
  detector.observe(
    "horizontalpodautoscalers",
    "update",
    hpa("h1", { current: 6, max: 10, limited: ["False", "DesiredWithinRange", T0 + 11 * MIN] }),
    T0 + 11 * MIN,
    false,
  );
  expect(detector.size).toBe(0);
  detector.observe("horizontalpodautoscalers", "update", pinned(T0 + 12 * MIN), T0 + 12 * MIN, false);
  expect(detector.tick(T0 + 22 * MIN)).toMatchObject([{ severity: "warning" }]);
});

test("hpa_metrics_dead: ScalingActive=False with FailedGet* for 15m is a warning; other reasons are not", () => {
  const detector = new AutoscalingDetector(AUTOSCALING_DEFAULTS);
  detector.observe(
    "horizontalpodautoscalers",
    "add",
    hpa("h3", { current: 2, max: 10, active: ["False", "FailedGetResourceMetric", T0] }),
    T0,
    true,
  );
  detector.observe(
    "horizontalpodautoscalers",
    "add",
    hpa("h4", { current: 0, max: 10, active: ["False", "ScalingDisabled", T0] }),
    T0,
    true,
  );
  expect(detector.tick(T0 + 15 * MIN - 1)).toEqual([]);
  expect(detector.tick(T0 + 15 * MIN)).toMatchObject([
    { kind: "autoscaling.hpa_metrics_dead", reason: "hpa_metrics_dead", uid: "h3", severity: "warning" },
  ]);
  expect(detector.tick(T0 + 60 * MIN)).toEqual([]);
  detector.observe("horizontalpodautoscalers", "delete", hpa("h3", { current: 2, max: 10 }), T0, false);
  expect(detector.size).toBe(0);
});

test("without a lastTransitionTime the time first seen counts, and a future one is clamped to now", () => {
  const detector = new AutoscalingDetector(AUTOSCALING_DEFAULTS);
  const object = hpa("h5", { current: 10, max: 10, limited: ["True", "TooManyReplicas", T0 + 60 * MIN] });
  detector.observe("horizontalpodautoscalers", "add", object, T0, true);
  expect(detector.tick(T0 + 10 * MIN)).toHaveLength(1);
});

test("autoscaling defaults without a flag: 10m, 30m, 15m, a 30s tick, the reference's grants", () => {
  expect(AUTOSCALING_DEFAULTS).toEqual({ pinnedWarnMs: 10 * MIN, pinnedCriticalMs: 30 * MIN, metricsDeadMs: 15 * MIN });
  expect(AUTOSCALING_SPEC.tickMs).toBe(30_000);
  expect(AUTOSCALING_SPEC.required.map((check) => `${check.verb} ${check.group}/${check.resource}`)).toEqual([
    "list autoscaling/horizontalpodautoscalers",
    "watch autoscaling/horizontalpodautoscalers",
  ]);
  const config = watcherConfigFromArgv(["--daemon-url=http://127.0.0.1:1", "--token-env=T"]);
  if (!config.ok) throw new Error(config.error);
  expect(sourceSettings("autoscaling", config.value)).toEqual(AUTOSCALING_DEFAULTS);
});

test("a lastTransitionTime ahead of the clock is one episode, not a new one at each update", () => {
  const detector = new AutoscalingDetector(AUTOSCALING_DEFAULTS);
  const object = hpa("h6", { current: 10, max: 10, limited: ["True", "TooManyReplicas", T0 + 60 * MIN] });
  detector.observe("horizontalpodautoscalers", "add", object, T0, true);
  expect(detector.tick(T0 + 10 * MIN)).toHaveLength(1);
  detector.observe("horizontalpodautoscalers", "update", object, T0 + 11 * MIN, false);
  expect(detector.tick(T0 + 12 * MIN)).toEqual([]);
});
