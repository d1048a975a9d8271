/**
 * Source clearance (D437-D439): each detector's open conditions (what it paged on that still
 * holds) appear when it fires and go away as its source's clearing rule says; the host's diff turns
 * that into `opened` and `cleared` reports, and a fresh diff (a new worker) never reports a clear
 * it did not see open; the main thread's registry keys them like the dedup cache, answers in the
 * documented order before the graph's pod and node clearance, and forgets old records.
 */
import { describe, expect, test } from "bun:test";
import type { DedupIncident } from "../../../src/watcher/core/dedup-cache.ts";
import { type OpenCondition, OpenConditionDiff } from "../../../src/watcher/core/open-conditions.ts";
import { AUTOSCALING_DEFAULTS, AutoscalingDetector } from "../../../src/watcher/core/sources/autoscaling-detector.ts";
import { DEGRADATION_DEFAULTS, DegradationDetector } from "../../../src/watcher/core/sources/degradation-detector.ts";
import { ExpiryDetector } from "../../../src/watcher/core/sources/expiry-detector.ts";
import { GatewayDetector } from "../../../src/watcher/core/sources/gateway-source.ts";
import { RolloutDetector } from "../../../src/watcher/core/sources/rollout-detector.ts";
import { WORKLOAD_DEFAULTS, WorkloadDetector } from "../../../src/watcher/core/sources/workload-detector.ts";
import { CLEARED_TTL_MS, OPEN_TTL_MS, SourceClearances } from "../../../src/watcher/source-clearances.ts";
import { cronJob, deployment, endpointSlice, hpa, iso, job, MIN, pod, replicaSet, T0 } from "./workload-objects.ts";

const open = (detector: { open?(): Iterable<OpenCondition> }) => [...(detector.open?.() ?? [])];

describe("each detector's open conditions", () => {
  test("rollout: a fired stall is open until the rollout completes; a deleted workload clears it", () => {
    const detector = new RolloutDetector({ observeMs: 3 * MIN, oldReadyRatio: 0.9 });
    detector.observe("deployments", "add", deployment("d1", "web"), T0, true);
    detector.observe("replicasets", "add", replicaSet("rs-old", "d1", 1, 10, 10), T0, true);
    detector.observe("replicasets", "add", replicaSet("rs-new", "d1", 2, 3, 0), T0, true);
    detector.tick(T0);
    expect(open(detector)).toEqual([]);
    expect(detector.tick(T0 + 3 * MIN)).toHaveLength(1);
    expect(open(detector)).toEqual([{ uid: "d1", reason: "rollout_stall" }]);
    detector.observe("replicasets", "update", replicaSet("rs-new", "d1", 2, 10, 10), T0 + 4 * MIN, false);
    detector.observe("replicasets", "update", replicaSet("rs-old", "d1", 1, 0, 0), T0 + 4 * MIN, false);
    expect(open(detector)).toEqual([{ uid: "d1", reason: "rollout_stall" }]);
    detector.tick(T0 + 4 * MIN);
    expect(open(detector)).toEqual([]);
    // Stalled again, then deleted: cleared too.
    detector.observe("replicasets", "add", replicaSet("rs-3", "d1", 3, 3, 0), T0 + 5 * MIN, false);
    detector.observe("replicasets", "update", replicaSet("rs-new", "d1", 2, 10, 10), T0 + 5 * MIN, false);
    detector.tick(T0 + 5 * MIN);
    detector.tick(T0 + 8 * MIN);
    expect(open(detector)).toHaveLength(1);
    detector.observe("deployments", "delete", deployment("d1", "web"), T0 + 9 * MIN, false);
    expect(open(detector)).toEqual([]);
  });

  test("workload: a failed Job is open until deleted or no longer failed; a missed CronJob until it schedules", () => {
    const activations = (_s: string, _z: string | undefined, after: number, until: number) => ({
      activations: [after + MIN].filter((at) => at <= until),
    });
    const detector = new WorkloadDetector({ ...WORKLOAD_DEFAULTS, graceMs: MIN, activations });
    expect(detector.observe("jobs", "add", job("j1", true), T0, false)).toHaveLength(1);
    expect(open(detector)).toEqual([{ uid: "j1", reason: "job_failed" }]);
    detector.observe("jobs", "delete", job("j1", true), T0 + MIN, false);
    expect(open(detector)).toEqual([]);
    // A failed Job already there at a relist is open too: a new worker confirms the condition.
    detector.observe("jobs", "add", job("j2", true), T0, true);
    expect(open(detector)).toEqual([{ uid: "j2", reason: "job_failed" }]);
    detector.observe("jobs", "update", job("j2", false), T0 + MIN, false);
    expect(open(detector)).toEqual([]);
    detector.observe("cronjobs", "add", cronJob("c1", "* * * * *", { created: T0 }), T0, true);
    expect(detector.tick(T0 + 3 * MIN)).toHaveLength(1);
    expect(open(detector)).toEqual([{ uid: "c1", reason: "cron_missed" }]);
    const scheduled = cronJob("c1", "* * * * *", { created: T0, lastSchedule: T0 + 4 * MIN });
    detector.observe("cronjobs", "update", scheduled, T0 + 4 * MIN, false);
    expect(open(detector)).toEqual([]);
  });

  test("autoscaling: a paged pin is open until the condition ends", () => {
    const detector = new AutoscalingDetector(AUTOSCALING_DEFAULTS);
    const pinned = hpa("h1", { current: 10, max: 10, limited: ["True", "TooManyReplicas", T0] });
    detector.observe("horizontalpodautoscalers", "add", pinned, T0, true);
    expect(open(detector)).toEqual([]);
    detector.tick(T0 + 10 * MIN);
    expect(open(detector)).toEqual([{ uid: "h1", reason: "hpa_pinned" }]);
    const dead = hpa("h1", { current: 10, max: 10, active: ["False", "FailedGetResourceMetric", T0] });
    detector.observe("horizontalpodautoscalers", "update", dead, T0 + 11 * MIN, false);
    expect(open(detector)).toEqual([]);
    detector.tick(T0 + 16 * MIN);
    expect(open(detector)).toEqual([{ uid: "h1", reason: "hpa_metrics_dead" }]);
    detector.observe("horizontalpodautoscalers", "delete", dead, T0 + 17 * MIN, false);
    expect(open(detector)).toEqual([]);
  });

  test("degradation: a degraded Service is open until its ratio recovers; a flapping pod until its flips age out", () => {
    const detector = new DegradationDetector(DEGRADATION_DEFAULTS);
    const slices = (ready: number, at: number, initial = false) =>
      detector.observe(
        "endpointslices",
        initial ? "add" : "update",
        endpointSlice("es1", "web", ready, 10),
        at,
        initial,
      );
    slices(10, T0, true);
    slices(7, T0 + MIN);
    expect(slices(6, T0 + 2 * MIN)).toHaveLength(1);
    expect(open(detector)).toEqual([{ uid: "web-uid", reason: "capacity" }]);
    slices(10, T0 + 3 * MIN);
    expect(open(detector)).toEqual([]);
    detector.observe("pods", "add", pod("p1", { ready: true }), T0, true);
    for (let flip = 1; flip <= 4; flip++)
      detector.observe("pods", "update", pod("p1", { ready: flip % 2 === 0 }), T0 + flip * MIN, false);
    expect(open(detector)).toEqual([{ uid: "p1", reason: "probe_flap" }]);
    detector.tick(T0 + 30 * MIN);
    expect(open(detector)).toEqual([]);
  });

  test("expiry: every reason a finding paged under is open until it is renewed past the horizon", () => {
    const DAY = 24 * 60 * MIN;
    const detector = new ExpiryDetector({
      warnMs: 14 * DAY,
      intervalMs: 60 * MIN,
      namespaces: [],
      certManager: false,
      parse: (pem) => [{ notAfter: Number(pem), subject: "CN=web" }],
    });
    const secret = (notAfter: number) => ({
      kind: "List",
      items: [
        {
          metadata: { namespace: "shop", name: "web-tls", uid: "uid-web-tls" },
          type: "kubernetes.io/tls",
          data: { "tls.crt": btoa(String(notAfter)) },
        },
      ],
    });
    const notAfter = T0 + 10 * DAY;
    expect(detector.polled("tls-secrets", secret(notAfter), T0)).toMatchObject([{ reason: "cert_expiring" }]);
    expect(open(detector)).toEqual([{ uid: "uid-web-tls", reason: "cert_expiring" }]);
    expect(detector.polled("tls-secrets", secret(notAfter), notAfter + MIN)).toMatchObject([
      { reason: "cert_expired" },
    ]);
    expect(open(detector)).toEqual([
      { uid: "uid-web-tls", reason: "cert_expiring" },
      { uid: "uid-web-tls", reason: "cert_expired" },
    ]);
    // A failed scan clears nothing; a renewal clears both.
    detector.polled("tls-secrets", undefined, notAfter + 2 * MIN, "HTTP 500");
    expect(open(detector)).toHaveLength(2);
    detector.polled("tls-secrets", secret(notAfter + 90 * DAY), notAfter + 3 * MIN);
    expect(open(detector)).toEqual([]);
  });

  test("gateway: a paged Gateway is open until no condition fails", () => {
    const detector = new GatewayDetector({ graceMs: 5 * MIN });
    const gateway = (status: string) => ({
      metadata: { namespace: "shop", name: "gw", uid: "uid-gw", generation: 2 },
      status: {
        conditions: [
          { type: "Programmed", status, reason: "Invalid", observedGeneration: 2, lastTransitionTime: iso(T0) },
        ],
      },
    });
    detector.observe("gateways", "add", gateway("False"), T0 + MIN, false);
    expect(open(detector)).toEqual([]);
    expect(detector.tick(T0 + 5 * MIN)).toHaveLength(1);
    expect(open(detector)).toEqual([{ uid: "uid-gw", reason: "programming_failed" }]);
    detector.observe("gateways", "update", gateway("True"), T0 + 6 * MIN, false);
    expect(open(detector)).toEqual([]);
  });
});

describe("the host's diff", () => {
  test("reports each condition once when it opens and once, with when, when it clears", () => {
    const diff = new OpenConditionDiff();
    const stall = { uid: "d1", reason: "rollout_stall" };
    expect(diff.diff([], T0)).toEqual([]);
    expect(diff.diff([stall], T0 + 1)).toEqual([{ event: "opened", ...stall, at: T0 + 1 }]);
    expect(diff.diff([stall], T0 + 2)).toEqual([]);
    expect(diff.diff([], T0 + 3)).toEqual([{ event: "cleared", ...stall, at: T0 + 3 }]);
    expect(diff.size).toBe(0);
  });

  test("a clear whose object the host saw deleted since the last diff is object_deleted", () => {
    const diff = new OpenConditionDiff();
    diff.diff(
      [
        { uid: "j1", reason: "job_failed" },
        { uid: "j2", reason: "job_failed" },
      ],
      T0,
    );
    expect(diff.diff([], T0 + 1, new Set(["j1"]))).toEqual([
      { event: "cleared", uid: "j1", reason: "job_failed", at: T0 + 1, resolution: "object_deleted" },
      { event: "cleared", uid: "j2", reason: "job_failed", at: T0 + 1 },
    ]);
  });

  test("a fresh diff (a replaced worker) never reports a clear for what it did not see open (D438)", () => {
    const fresh = new OpenConditionDiff();
    expect(fresh.diff([], T0)).toEqual([]);
    expect(fresh.diff([], T0 + MIN)).toEqual([]);
  });
});

describe("the registry", () => {
  const incident: DedupIncident = {
    namespace: "shop",
    kind_of_object: "Deployment",
    name: "web",
    fingerprint: "sha256:x",
    cluster: "c",
  };

  test("keys by uid and canonical reason; open judges not cleared, cleared judges with its time", () => {
    let now = T0;
    const registry = new SourceClearances(() => now);
    expect(registry.lookup("d1", incident, "rollout_stall")).toBeUndefined();
    registry.report("rollout", { event: "opened", uid: "d1", reason: "rollout_stall", at: T0 });
    expect(registry.lookup("d1", incident, "rollout_stall")).toEqual({ cleared: false });
    expect(registry.lookup("d1", incident, "CrashLoopBackOff")).toBeUndefined();
    now = T0 + MIN;
    registry.report("rollout", { event: "cleared", uid: "d1", reason: "rollout_stall", at: T0 + MIN });
    expect(registry.lookup("d1", incident, "rollout_stall")).toEqual({ cleared: true, stableSince: T0 + MIN });
    registry.report("workload", {
      event: "cleared",
      uid: "j1",
      reason: "job_failed",
      at: now,
      resolution: "object_deleted",
    });
    expect(registry.lookup("j1", incident, "job_failed")).toEqual({
      cleared: true,
      stableSince: now,
      resolution: "object_deleted",
    });
    // A source reason with a canonical family is filed under the family (the dedup key's).
    registry.report("capacity", { event: "opened", uid: "p1", reason: "pending-aged", at: now });
    expect(registry.lookup("p1", incident, "FailedScheduling")).toEqual({ cleared: false });
  });

  test("sources answer in the documented order, before the fallback (pod and node clearance)", () => {
    const registry = new SourceClearances(() => T0);
    registry.report("autoscaling", { event: "cleared", uid: "u", reason: "r", at: T0 });
    registry.report("rollout", { event: "opened", uid: "u", reason: "r", at: T0 });
    const asked: string[] = [];
    const chained = registry.chain((uid) => {
      asked.push(uid);
      return { cleared: true };
    });
    expect(chained("u", incident, "r")).toEqual({ cleared: false });
    expect(asked).toEqual([]);
    expect(chained("pod-1", incident, "CrashLoopBackOff")).toEqual({ cleared: true });
    expect(asked).toEqual(["pod-1"]);
    expect(registry.chain(undefined)("pod-1", incident, "CrashLoopBackOff")).toBeUndefined();
  });

  test("cleared records are forgotten after two hours, open ones after a day (bounded, D439)", () => {
    let now = T0;
    const registry = new SourceClearances(() => now);
    registry.report("rollout", { event: "cleared", uid: "a", reason: "rollout_stall", at: T0 });
    registry.report("workload", { event: "opened", uid: "b", reason: "job_failed", at: T0 });
    now = T0 + CLEARED_TTL_MS + 1;
    expect(registry.lookup("a", incident, "rollout_stall")).toBeUndefined();
    expect(registry.lookup("b", incident, "job_failed")).toEqual({ cleared: false });
    registry.report("gateway", { event: "opened", uid: "c", reason: "route_rejected", at: now });
    expect(registry.size).toBe(2);
    now = T0 + OPEN_TTL_MS + 1;
    expect(registry.lookup("b", incident, "job_failed")).toBeUndefined();
    registry.report("gateway", { event: "cleared", uid: "c", reason: "route_rejected", at: now });
    expect(registry.size).toBe(1);
  });
});
