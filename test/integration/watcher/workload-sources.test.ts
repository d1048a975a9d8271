/**
 * The rollout, workload, autoscaling and degradation sources (D380-D383) against the fake
 * apiserver, each run by the contract's host with short thresholds and a fast tick: each fires on
 * its scenario, and not before its threshold; their RBAC probes through real access reviews:
 * granted, enabled; a missing grant disables the source with one line under `auto` and refuses
 * startup naming the source when it was named.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { type AccessCheck, checkKey, planAccess } from "../../../src/watcher/core/access-plan.ts";
import type { Signal } from "../../../src/watcher/core/signal.ts";
import type { SourceSpec } from "../../../src/watcher/core/source-spec.ts";
import { AUTOSCALING_SPEC } from "../../../src/watcher/core/sources/autoscaling-detector.ts";
import { DEGRADATION_DEFAULTS, DEGRADATION_SPEC } from "../../../src/watcher/core/sources/degradation-detector.ts";
import { ROLLOUT_SPEC } from "../../../src/watcher/core/sources/rollout-detector.ts";
import { WORKLOAD_DEFAULTS, WORKLOAD_SPEC } from "../../../src/watcher/core/sources/workload-detector.ts";
import { reviewAccess } from "../../../src/watcher/kube/access-review.ts";
import { cronActivations } from "../../../src/watcher/sources/cron-schedule.ts";
import { DetectorSource } from "../../../src/watcher/sources/detector-source.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { waitFor } from "../../support/daemon.ts";

let api: FakeApiserver;
const sources: DetectorSource<unknown>[] = [];
beforeAll(async () => {
  api = await startFakeApiserver({});
});
afterAll(async () => {
  for (const source of sources) await source.stop();
  api.stop();
});

async function run<S>(spec: SourceSpec<S>, settings: S): Promise<Signal[]> {
  const emitted: Signal[] = [];
  const source = new DetectorSource({
    spec: { ...spec, tickMs: 25 },
    settings,
    connection: { server: api.url, tls: {}, token: () => undefined },
    emit: (signal) => emitted.push(signal),
    logger: createLogger("error"),
    onRestart: () => {},
  });
  sources.push(source as DetectorSource<unknown>);
  await source.start();
  return emitted;
}

const iso = (ms: number) => new Date(ms).toISOString();
const owner = (kind: string, name: string, uid: string) => [
  { apiVersion: "apps/v1", kind, name, uid, controller: true },
];

function replicaSet(name: string, revision: number, desired: number, ready: number, deploymentUid: string) {
  return {
    apiVersion: "apps/v1",
    kind: "ReplicaSet",
    metadata: {
      name,
      namespace: "shop",
      annotations: { "deployment.kubernetes.io/revision": String(revision) },
      ownerReferences: owner("Deployment", "web", deploymentUid),
    },
    spec: { replicas: desired },
    status: { readyReplicas: ready },
  };
}

test("rollout: a Deployment whose new ReplicaSet gains no ready replica stalls after the observe time", async () => {
  const deployment = api.scenario.create({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: "shop" },
  });
  const uid = String((deployment.metadata as { uid: string }).uid);
  api.scenario.create(replicaSet("web-1", 1, 10, 10, uid));
  const started = Date.now();
  const emitted = await run(ROLLOUT_SPEC, { observeMs: 400, oldReadyRatio: 0.9 });
  api.scenario.create(replicaSet("web-2", 2, 3, 0, uid));
  await waitFor(() => (emitted.length > 0 ? true : undefined), 10_000, "rollout.stall");
  expect((emitted[0]?.firstSeen ?? 0) - started).toBeGreaterThanOrEqual(400);
  expect(emitted).toMatchObject([
    { kind: "rollout.stall", reason: "rollout_stall", uid, kindOfObject: "Deployment", severity: "warning" },
  ]);
});

test("workload: a Job turning Failed is job_failed; a CronJob that stopped scheduling is cron_missed", async () => {
  const now = Date.now();
  api.scenario.create({
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name: "once", namespace: "batch" },
    status: {},
  });
  api.scenario.create({
    apiVersion: "batch/v1",
    kind: "CronJob",
    metadata: { name: "nightly", namespace: "batch" },
    spec: { schedule: "* * * * *", timeZone: "Europe/Paris" },
    status: { lastScheduleTime: iso(now - 10 * 60_000) },
  });
  const emitted = await run(WORKLOAD_SPEC, { ...WORKLOAD_DEFAULTS, graceMs: 0, activations: cronActivations });
  await waitFor(
    () => (emitted.some((one) => one.kind === "workload.cron_missed") ? true : undefined),
    10_000,
    "cron_missed",
  );
  expect(emitted.find((one) => one.kind === "workload.cron_missed")).toMatchObject({
    severity: "critical",
    kindOfObject: "CronJob",
    name: "nightly",
  });
  api.scenario.patch(
    { apiVersion: "batch/v1", kind: "Job", namespace: "batch", name: "once" },
    { status: { conditions: [{ type: "Failed", status: "True", reason: "BackoffLimitExceeded" }] } },
  );
  await waitFor(
    () => (emitted.some((one) => one.kind === "workload.job_failed") ? true : undefined),
    10_000,
    "job_failed",
  );
  expect(emitted.filter((one) => one.kind === "workload.job_failed")).toMatchObject([
    { reason: "job_failed", name: "once", severity: "warning" },
  ]);
});

test("autoscaling: an HPA pinned at maxReplicas is hpa_pinned once its threshold passes, not before", async () => {
  const emitted = await run(AUTOSCALING_SPEC, { pinnedWarnMs: 300, pinnedCriticalMs: 60_000, metricsDeadMs: 60_000 });
  const started = Date.now();
  api.scenario.create({
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name: "web", namespace: "shop" },
    spec: { maxReplicas: 4 },
    status: {
      currentReplicas: 4,
      conditions: [
        { type: "ScalingLimited", status: "True", reason: "TooManyReplicas", lastTransitionTime: iso(started) },
      ],
    },
  });
  await waitFor(() => (emitted.length > 0 ? true : undefined), 10_000, "hpa_pinned");
  // Not before the threshold, counted from the condition's lastTransitionTime.
  expect((emitted[0]?.firstSeen ?? 0) - started).toBeGreaterThanOrEqual(300);
  expect(emitted).toMatchObject([
    { kind: "autoscaling.hpa_pinned", kindOfObject: "HorizontalPodAutoscaler", severity: "warning" },
  ]);
});

test("degradation: a Service's ready endpoints falling in two steps is degradation.capacity", async () => {
  const slice = (ready: number) => ({
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: { name: "api-abc", namespace: "shop", labels: { "kubernetes.io/service-name": "api" } },
    addressType: "IPv4",
    endpoints: Array.from({ length: 10 }, (_, index) => ({
      addresses: [`10.1.0.${index}`],
      conditions: { ready: index < ready },
    })),
  });
  api.scenario.create(slice(10));
  const emitted = await run(DEGRADATION_SPEC, { ...DEGRADATION_DEFAULTS, sampleGapMs: 0 });
  api.scenario.update(slice(8));
  api.scenario.update(slice(6));
  await waitFor(() => (emitted.length > 0 ? true : undefined), 10_000, "degradation.capacity");
  expect(emitted).toMatchObject([
    { kind: "degradation.capacity", uid: "service:shop/api", name: "api", severity: "warning" },
  ]);
});

test("the RBAC probes: granted, each source is enabled; a missing grant disables it under auto and refuses it when named", async () => {
  const names = ["cluster-events", "rollout", "workload", "autoscaling", "degradation"];
  const connection = { server: api.url, tls: {}, token: () => undefined };
  const review = async () => {
    const answers = new Map<string, Awaited<ReturnType<typeof reviewAccess>>>();
    const checks: AccessCheck[] = [ROLLOUT_SPEC, WORKLOAD_SPEC, AUTOSCALING_SPEC, DEGRADATION_SPEC].flatMap((spec) => [
      ...spec.required,
    ]);
    checks.push({ verb: "list", group: "", resource: "events" }, { verb: "watch", group: "", resource: "events" });
    for (const check of checks) answers.set(checkKey(check), await reviewAccess(connection, check));
    return (check: AccessCheck) => answers.get(checkKey(check)) ?? { allowed: false };
  };
  const granted = planAccess({ sources: { auto: true, names }, storm: "off" }, await review());
  expect(granted.sources).toEqual(names);
  // Everything but HPAs and CronJobs.
  api.scenario.setGrants([
    {
      verbs: ["list", "watch"],
      resources: ["events", "pods", "deployments", "replicasets", "statefulsets", "jobs", "endpointslices"],
    },
    { verbs: ["create"], resources: ["selfsubjectaccessreviews"] },
  ]);
  try {
    const answer = await review();
    const auto = planAccess({ sources: { auto: true, names }, storm: "off" }, answer);
    expect(auto.refusal).toBeUndefined();
    expect(auto.sources).toEqual(["cluster-events", "rollout", "degradation"]);
    expect(auto.notes.filter((note) => note.includes("disabled"))).toEqual([
      'source workload: disabled (missing "list cronjobs.batch cluster-wide" — grant it, or name it in --sources to make this fatal)',
      'source autoscaling: disabled (missing "list horizontalpodautoscalers.autoscaling cluster-wide" — grant it, or name it in --sources to make this fatal)',
    ]);
    const named = planAccess(
      { sources: { auto: false, names: ["cluster-events", "autoscaling"] }, storm: "off" },
      answer,
    );
    expect(named.refusal).toContain(
      'source "autoscaling" requires permission to "list horizontalpodautoscalers.autoscaling cluster-wide"',
    );
  } finally {
    api.scenario.setGrants(undefined);
  }
});
