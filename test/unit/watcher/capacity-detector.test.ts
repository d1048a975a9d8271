/**
 * The capacity detector's pieces: the autoscaler's events (D393 info kinds), scale-up gaps from
 * the status (D395), pending-pod aging (level-triggered), the bin-packing forecast per domain
 * (D396) and the provider interface's no-op default (D397): each at its threshold and not
 * before, clearing, the first list, and the state it keeps.
 */
import { describe, expect, test } from "bun:test";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { checkKey, describeCheck, planAccess } from "../../../src/watcher/core/access-plan.ts";
import { specForSettings } from "../../../src/watcher/core/source-catalog.ts";
import {
  BinPacking,
  MAX_SAMPLES,
  nodeDomain,
  podRequests,
  quantity,
} from "../../../src/watcher/core/sources/capacity-forecast.ts";
import { ScaleUpGaps } from "../../../src/watcher/core/sources/capacity-gap.ts";
import { PendingAging } from "../../../src/watcher/core/sources/capacity-pending.ts";
import { NO_CAPACITY_PROVIDER, providerSignal } from "../../../src/watcher/core/sources/capacity-provider.ts";
import {
  CAPACITY_DEFAULTS,
  CAPACITY_SPEC,
  type CapacitySettings,
  CapacityDetector,
} from "../../../src/watcher/core/sources/capacity-source.ts";
import { parseAutoscalerStatus } from "../../../src/watcher/core/sources/capacity-status.ts";
import { sourceSettings } from "../../../src/watcher/sources/source-registry.ts";
import { autoscalerEvent, configMap, type GroupInput, node, pod, textStatus, yamlStatus } from "./capacity-objects.ts";
import { MIN, T0 } from "./workload-objects.ts";

const yaml = (text: string) => Bun.YAML.parse(text);
const SETTINGS: CapacitySettings = { ...CAPACITY_DEFAULTS, parseYaml: yaml };
const status = (groups: GroupInput[]) =>
  parseAutoscalerStatus(yamlStatus(groups), yaml) ?? { format: "yaml" as const, clusterScaleUp: "", groups: [] };

describe("autoscaler events", () => {
  const podRef = { kind: "Pod", namespace: "shop", name: "web-1", uid: "pod-1" };
  const nodeRef = { kind: "Node", name: "n1", uid: "node-1" };

  test("NotTriggerScaleUp pages capacity.pending; scale-ups and scale-downs are info; ScaleDownFailed a warning", () => {
    const detector = new CapacityDetector(SETTINGS);
    const seen = (reason: string, involved: Record<string, unknown>, type = "Normal") =>
      detector.observe("events", "add", autoscalerEvent(reason, involved, "why", type), T0, false);
    expect(seen("NotTriggerScaleUp", podRef)).toMatchObject([
      { kind: "capacity.pending", reason: "pending", severity: "warning", uid: "pod-1", kindOfObject: "Pod", type: "" },
    ]);
    expect(seen("TriggeredScaleUp", podRef)).toMatchObject([
      { kind: "capacity.scaleup", reason: "scaleup", severity: "info" },
    ]);
    expect(seen("ScaleDown", nodeRef)).toMatchObject([{ kind: "capacity.scaledown", severity: "info", node: "n1" }]);
    expect(seen("ScaleDownEmpty", nodeRef)).toMatchObject([{ kind: "capacity.scaledown", severity: "info" }]);
    expect(seen("ScaleDownFailed", nodeRef, "Warning")).toMatchObject([
      { kind: "capacity.scaledown", severity: "warning", message: "ScaleDownFailed: why" },
    ]);
    expect(
      seen("ScaledUpGroup", { kind: "ConfigMap", namespace: "kube-system", name: "cluster-autoscaler-status" }),
    ).toEqual([]);
  });

  test("the first list is history: nothing; a deleted event is nothing; an event without a uid gets a synthetic one", () => {
    const detector = new CapacityDetector(SETTINGS);
    expect(detector.observe("events", "add", autoscalerEvent("NotTriggerScaleUp", podRef), T0, true)).toEqual([]);
    expect(detector.observe("events", "delete", autoscalerEvent("NotTriggerScaleUp", podRef), T0, false)).toEqual([]);
    const bare = { kind: "Pod", namespace: "shop", name: "web-2" };
    expect(detector.observe("events", "update", autoscalerEvent("NotTriggerScaleUp", bare), T0, false)).toMatchObject([
      { uid: "pod:shop/web-2" },
    ]);
  });
});

describe("scale-up gaps", () => {
  const inProgress = (since: number, ready = 3, scaleUp = "InProgress", extra: Partial<GroupInput> = {}) =>
    status([{ name: "pool-a", scaleUp, since, ready, target: 5, ...extra }]);

  test("a warning once the gap has lasted 3m from its transition, not before; once only", () => {
    const gaps = new ScaleUpGaps(3 * MIN);
    expect(gaps.judge(inProgress(T0), T0 + 3 * MIN - 1)).toEqual([]);
    expect(gaps.judge(inProgress(T0), T0 + 3 * MIN)).toMatchObject([
      {
        kind: "capacity.scaleup_gap",
        reason: "scaleup_gap",
        uid: "nodegroup:pool-a",
        kindOfObject: "NodeGroup",
        name: "pool-a",
        namespace: "",
        severity: "warning",
        message:
          "node group pool-a: scale-up InProgress for 3m0s without a new ready node (ready=3 cloudProviderTarget=5)",
      },
    ]);
    expect(gaps.judge(inProgress(T0), T0 + 10 * MIN)).toEqual([]);
  });

  test("a gap older than the watcher is judged at the first answer (the autoscaler's clock)", () => {
    const gaps = new ScaleUpGaps(3 * MIN);
    expect(gaps.judge(inProgress(T0 - 20 * MIN), T0)).toMatchObject([{ severity: "warning" }]);
  });

  test("Backoff with an error escalates once to critical; Backoff without one stays a warning", () => {
    const gaps = new ScaleUpGaps(3 * MIN);
    expect(gaps.judge(inProgress(T0), T0 + 3 * MIN)).toHaveLength(1);
    expect(gaps.judge(inProgress(T0 + 4 * MIN, 3, "Backoff"), T0 + 4 * MIN)).toEqual([]);
    const errored = inProgress(T0 + 4 * MIN, 3, "Backoff", { errorCode: "QUOTA_EXCEEDED", errorMessage: "CPUS" });
    expect(gaps.judge(errored, T0 + 5 * MIN)).toMatchObject([
      {
        severity: "critical",
        message: expect.stringContaining(
          "Backoff for 5m0s without a new ready node (ready=3 cloudProviderTarget=5): QUOTA_EXCEEDED: CPUS",
        ),
      },
    ]);
    expect(gaps.judge(errored, T0 + 9 * MIN)).toEqual([]);
    const fresh = new ScaleUpGaps(3 * MIN);
    expect(fresh.judge(errored, T0 + 7 * MIN)).toMatchObject([{ severity: "critical" }]);
  });

  test("a growing ready count restarts the gap; recovery clears it so it pages again; groups gone are forgotten", () => {
    const gaps = new ScaleUpGaps(3 * MIN);
    gaps.judge(inProgress(T0, 3), T0 + 2 * MIN);
    expect(gaps.judge(inProgress(T0, 4), T0 + 4 * MIN)).toEqual([]);
    expect(gaps.judge(inProgress(T0, 4), T0 + 7 * MIN - 1)).toEqual([]);
    expect(gaps.judge(inProgress(T0, 4), T0 + 7 * MIN)).toHaveLength(1);
    expect(gaps.judge(inProgress(T0 + 8 * MIN, 5, "NoActivity"), T0 + 8 * MIN)).toEqual([]);
    expect(gaps.size).toBe(0);
    expect(gaps.judge(inProgress(T0 + 9 * MIN), T0 + 12 * MIN)).toHaveLength(1);
    expect(gaps.judge(status([]), T0 + 13 * MIN)).toEqual([]);
    expect(gaps.size).toBe(0);
  });

  test("the old text shape pages the same way", () => {
    const gaps = new ScaleUpGaps(3 * MIN);
    const text = parseAutoscalerStatus(
      textStatus([{ name: "pool-t", scaleUp: "InProgress", since: T0, ready: 1, target: 3 }]),
      yaml,
    );
    expect(text && gaps.judge(text, T0 + 3 * MIN)).toMatchObject([{ uid: "nodegroup:pool-t", severity: "warning" }]);
  });
});

describe("pending-pod aging", () => {
  const aging = () => new PendingAging({ warnMs: 5 * MIN, criticalMs: 15 * MIN });

  test("a warning at --pending-age, one critical at 15m, not before; from the condition's transition", () => {
    const pending = aging();
    pending.observe("add", pod({ uid: "p1", unschedulableSince: T0 }), T0 + MIN);
    expect(pending.judge(T0 + 5 * MIN - 1)).toEqual([]);
    expect(pending.judge(T0 + 5 * MIN)).toMatchObject([
      {
        kind: "capacity.pending-aged",
        reason: "pending-aged",
        uid: "p1",
        kindOfObject: "Pod",
        severity: "warning",
        controllerRef: "ReplicaSet/web-1",
        message: "pod shop/p1 Pending and Unschedulable for 5m0s: 0/3 nodes are available: 3 Insufficient cpu.",
      },
    ]);
    expect(pending.judge(T0 + 15 * MIN - 1)).toEqual([]);
    expect(pending.judge(T0 + 15 * MIN)).toMatchObject([{ severity: "critical" }]);
    expect(pending.judge(T0 + 60 * MIN)).toEqual([]);
  });

  test("level-triggered: a pod already old in the first list is reported at the first judgement", () => {
    const pending = aging();
    pending.observe("add", pod({ uid: "p1", unschedulableSince: T0 - 20 * MIN }), T0);
    expect(pending.judge(T0)).toMatchObject([{ severity: "critical" }]);
  });

  test("scheduled or deleted clears it (and it pages again when it returns); only unschedulable pods are held", () => {
    const pending = aging();
    pending.observe("add", pod({ uid: "p1", unschedulableSince: T0 }), T0);
    pending.observe("add", pod({ uid: "p2", unschedulableSince: T0 }), T0);
    pending.observe("add", pod({ uid: "p3", node: "n1" }), T0);
    pending.observe("add", pod({ uid: "p4" }), T0);
    expect(pending.size).toBe(2);
    expect(pending.judge(T0 + 5 * MIN)).toHaveLength(2);
    pending.observe("update", pod({ uid: "p1", node: "n1" }), T0 + 6 * MIN);
    pending.observe("delete", pod({ uid: "p2", unschedulableSince: T0 }), T0 + 6 * MIN);
    expect(pending.size).toBe(0);
    pending.observe("update", pod({ uid: "p1", unschedulableSince: T0 + 7 * MIN }), T0 + 7 * MIN);
    expect(pending.judge(T0 + 12 * MIN)).toMatchObject([{ uid: "p1", severity: "warning" }]);
  });

  test("no transition time: from creation, else first sight, never later than now", () => {
    const pending = aging();
    const created = pod({ uid: "p1", unschedulableSince: T0, created: T0 - 10 * MIN });
    const conditions = (created.status as { conditions: Record<string, unknown>[] }).conditions;
    delete conditions[0]?.lastTransitionTime;
    pending.observe("add", created, T0);
    expect(pending.judge(T0 - 5 * MIN)).toMatchObject([{ severity: "warning" }]);
    const unseen = pod({ uid: "p2", unschedulableSince: T0 + 60 * MIN });
    pending.observe("add", unseen, T0);
    expect(pending.judge(T0 + 5 * MIN)).toMatchObject([
      { uid: "p1", severity: "critical" },
      { uid: "p2", severity: "warning" },
    ]);
  });

  test("settings: critical at max(15m, --pending-age); --capacity-poll drives the poll", () => {
    const read = (args: string[]) => {
      const parsed = watcherConfigFromArgv(["--dry-run", ...args]);
      if (!parsed.ok) throw new Error(parsed.error);
      return sourceSettings("capacity", parsed.value) as CapacitySettings;
    };
    expect(read([])).toMatchObject({
      pollMs: MIN,
      pendingWarnMs: 5 * MIN,
      pendingCriticalMs: 15 * MIN,
      gapMs: 3 * MIN,
    });
    expect(read(["--pending-age=20m", "--capacity-poll=10s"])).toMatchObject({
      pollMs: 10_000,
      pendingWarnMs: 20 * MIN,
      pendingCriticalMs: 20 * MIN,
    });
    const spec = specForSettings(CAPACITY_SPEC, read(["--capacity-poll=10s"]));
    expect(spec.polls).toEqual([
      {
        name: "autoscaler-status",
        path: "/api/v1/namespaces/kube-system/configmaps/cluster-autoscaler-status",
        everyMs: 10_000,
      },
    ]);
    expect(spec.required).toContainEqual({
      verb: "get",
      group: "",
      resource: "configmaps",
      namespace: "kube-system",
      name: "cluster-autoscaler-status",
    });
  });
});

describe("bin-packing forecast", () => {
  const forecast = { windowMs: 180 * MIN, minSamples: 10, warnMs: 240 * MIN, criticalMs: 60 * MIN };

  test("quantities, requests as the scheduler counts them, and the domain label order", () => {
    expect([
      quantity("250m"),
      quantity("2"),
      quantity("1.5"),
      quantity("512Mi"),
      quantity("1G"),
      quantity("1e3"),
      quantity("x"),
    ]).toEqual([0.25, 2, 1.5, 512 * 2 ** 20, 1e9, 1000, 0]);
    const withInit = {
      spec: {
        containers: [
          { resources: { requests: { cpu: "100m", memory: "64Mi" } } },
          { resources: { requests: { cpu: "200m" } } },
        ],
        initContainers: [{ resources: { requests: { cpu: "1", memory: "32Mi" } } }],
        overhead: { cpu: "50m" },
      },
    };
    expect(podRequests(withInit)).toEqual({ cpu: 1.05, memory: 64 * 2 ** 20 });
    const labelled = (labels: Record<string, string>) => ({ metadata: { labels } });
    expect(
      nodeDomain(labelled({ "node.kubernetes.io/instance-type": "m5.large", "eks.amazonaws.com/nodegroup": "ng-1" })),
    ).toBe("ng-1");
    expect(
      nodeDomain(labelled({ "karpenter.sh/nodepool": "general", "node.kubernetes.io/instance-type": "m5.large" })),
    ).toBe("general");
    expect(nodeDomain(labelled({ "node.kubernetes.io/instance-type": "m5.large" }))).toBe("m5.large");
    expect(nodeDomain(labelled({}))).toBe("default");
  });

  /** Ten samples, one a minute, with `perSample` more CPU requested each time. */
  function grow(packing: BinPacking, start: number, perSample: number, samples = 10, at = T0) {
    const signals = [];
    for (let index = 0; index < samples; index++) {
      packing.observePod("add", pod({ uid: `g${start + index}`, node: "n1", cpu: String(perSample) }));
      signals.push(...packing.sample(at + index * MIN));
    }
    return signals;
  }

  test("nothing before 10 samples; critical when the line reaches allocatable within 1h", () => {
    const packing = new BinPacking(forecast);
    packing.observeNode("add", node("n1", "pool-a", "10", "40Gi"));
    const early = grow(packing, 0, 0.5, 9);
    expect(early).toEqual([]);
    const signals = grow(packing, 9, 0.5, 1, T0 + 9 * MIN);
    expect(signals).toMatchObject([
      {
        kind: "capacity.cluster_forecast",
        reason: "cluster_forecast",
        uid: "nodegroup:pool-a",
        kindOfObject: "NodeGroup",
        name: "pool-a",
        severity: "critical",
      },
    ]);
    expect(signals[0]?.message).toContain(
      "node group pool-a: cpu requests at 50.0% of allocatable (5.0 cores of 10.0 cores)",
    );
    expect(signals[0]?.message).toContain("(10 samples over 9m0s)");
    expect(signals[0]?.forecast?.confidenceBasis).toBe("linear-3h-window");
    expect(signals[0]?.forecast?.eta).toBeGreaterThan(T0 + 9 * MIN);
  });

  test("a slow rise is a warning (ETA within 4h), later critical once; flat clears the latch, so a new rise pages again", () => {
    const packing = new BinPacking({ ...forecast, windowMs: 30 * MIN });
    packing.observeNode("add", node("n1", "pool-a", "100", "400Gi"));
    // 0.5 cores a minute of 100: 0.5%/min; from 5% the ETA is ~3h: a warning.
    expect(grow(packing, 0, 0.5)).toMatchObject([
      { severity: "warning", message: expect.stringContaining("full in ~3h10m0s") },
    ]);
    expect(grow(packing, 10, 0.5, 5, T0 + 10 * MIN)).toEqual([]);
    expect(grow(packing, 100, 5, 10, T0 + 15 * MIN).map((signal) => signal.severity)).toEqual(["critical"]);
    expect(grow(packing, 200, 5, 3, T0 + 25 * MIN)).toEqual([]);
    // Everything freed and flat for longer than the window: the latch clears.
    for (const uid of [0, 10, 100, 200].flatMap((start) => Array.from({ length: 15 }, (_, index) => start + index)))
      packing.observePod("delete", pod({ uid: `g${uid}`, node: "n1" }));
    for (let minute = 30; minute < 70; minute++) expect(packing.sample(T0 + minute * MIN)).toEqual([]);
    expect(grow(packing, 500, 5, 10, T0 + 70 * MIN).map((signal) => signal.severity)).toEqual(["warning", "critical"]);
  });

  test("domains: per node group; cordoned nodes and finished pods left out; a domain without nodes is forgotten; samples bounded", () => {
    const packing = new BinPacking({ ...forecast, minSamples: 1000 });
    packing.observeNode("add", node("a1", "pool-a", "4", "16Gi"));
    packing.observeNode("add", node("b1", "pool-b", "4", "16Gi"));
    packing.observeNode("add", node("b2", "pool-b", "4", "16Gi", true));
    packing.observePod("add", pod({ uid: "x", node: "b2", cpu: "1" }));
    packing.observePod("add", pod({ uid: "y", node: "a1", cpu: "1", phase: "Succeeded" }));
    packing.observePod("add", pod({ uid: "z", unschedulableSince: T0 }));
    expect(packing.size).toMatchObject({ nodes: 3, pods: 1, domains: 0 });
    for (let index = 0; index < MAX_SAMPLES + 50; index++) packing.sample(T0 + index * 1000);
    expect(packing.size).toMatchObject({ domains: 2, samples: 2 * MAX_SAMPLES });
    packing.observeNode("delete", node("a1", "pool-a", "4", "16Gi"));
    packing.sample(T0 + 200 * MIN);
    expect(packing.size).toMatchObject({ domains: 1, samples: 1 });
  });
});

test("the composed detector: one poll answer judges gaps, pending ages and a forecast sample; a failed poll still ages pods", () => {
  const detector = new CapacityDetector({ ...SETTINGS, forecast: { ...SETTINGS.forecast, minSamples: 2 } });
  detector.observe("nodes", "add", node("n1", "pool-a", "1", "4Gi"), T0, true);
  detector.observe("pods", "add", pod({ uid: "p1", unschedulableSince: T0 - 10 * MIN }), T0, true);
  detector.observe("pods", "add", pod({ uid: "r1", node: "n1", cpu: "100m" }), T0, true);
  const first = detector.polled(
    "autoscaler-status",
    configMap(yamlStatus([{ name: "pool-a", scaleUp: "InProgress", since: T0 - 5 * MIN }])),
    T0,
  );
  expect(first.map((signal) => signal.kind)).toEqual(["capacity.scaleup_gap", "capacity.pending-aged"]);
  detector.observe("pods", "add", pod({ uid: "r2", node: "n1", cpu: "500m" }), T0 + MIN, false);
  const second = detector.polled("autoscaler-status", undefined, T0 + MIN, "GET ...: HTTP 404");
  expect(second.map((signal) => `${signal.kind}:${signal.severity}`)).toEqual(["capacity.cluster_forecast:critical"]);
  expect(detector.gaps.size).toBe(1);
  const text = detector.polled("autoscaler-status", configMap("not a status"), T0 + 2 * MIN);
  expect(text.map((signal) => signal.kind)).toEqual([]);
});

test("provider decisions: the portable build has none; a decision would be a critical capacity kind", async () => {
  expect(NO_CAPACITY_PROVIDER.name).toBe("none");
  expect(await NO_CAPACITY_PROVIDER.decisions(0)).toEqual([]);
  expect(
    providerSignal({
      kind: "stockout",
      nodeGroup: "pool-a",
      location: "europe-west1-b",
      message: "ZONE_RESOURCE_POOL_EXHAUSTED",
      at: T0,
    }),
  ).toMatchObject({
    kind: "capacity.stockout",
    reason: "stockout",
    uid: "nodegroup:pool-a",
    severity: "critical",
    message: "node group pool-a in europe-west1-b: ZONE_RESOURCE_POOL_EXHAUSTED",
  });
});

test("a named grant (D394): described with its object and namespace, keyed apart, unnamed keys unchanged; auto names where it goes", () => {
  const named = {
    verb: "get",
    group: "",
    resource: "configmaps",
    namespace: "kube-system",
    name: "cluster-autoscaler-status",
  };
  expect(describeCheck(named)).toBe("get configmaps cluster-autoscaler-status in namespace kube-system");
  expect(checkKey(named)).toBe("get||configmaps||kube-system|cluster-autoscaler-status");
  expect(checkKey({ verb: "list", group: "", resource: "pods" })).toBe("list||pods||");
  const plan = planAccess({ sources: { auto: true, names: ["cluster-events", "capacity"] }, storm: "off" }, (check) =>
    check.resource === "configmaps" ? { allowed: false } : { allowed: true },
  );
  expect(plan.sources).toEqual(["cluster-events"]);
  expect(plan.notes).toContain(
    'source capacity: disabled (missing "get configmaps cluster-autoscaler-status in namespace kube-system" — grant it (a Role and RoleBinding in kube-system: docs/watcher.md#capacity), or name it in --sources to make this fatal)',
  );
});
