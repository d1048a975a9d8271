/**
 * The topology-drift detector (D406-D410): a domain with no usable node for the dwell is one
 * critical domain_unavailable, cleared by a usable node; a workload's spread beyond its intent for
 * the dwell is one spread_drift (tier A and B always; tier C only with tier-C signals, judged
 * against an even spread or a learned baseline); node groups against the capacity ratio, capped;
 * the first list emits nothing; deletes forget.
 */
import { expect, test } from "bun:test";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { sourceSettings } from "../../../src/watcher/sources/source-registry.ts";
import type { Signal } from "../../../src/watcher/core/signal.ts";
import {
  TOPOLOGY_DEFAULTS,
  TopologyDriftDetector,
  type TopologySettings,
} from "../../../src/watcher/core/sources/topology-drift.ts";
import { spread } from "../../../src/watcher/core/sources/topology-intent.ts";
import { deployment, MIN, node, type NodeShape, pod, spreadConstraint, T0 } from "./leeway-objects.ts";

const DWELL = 10 * MIN;

function detector(overrides: Partial<TopologySettings> = {}): TopologyDriftDetector {
  return new TopologyDriftDetector({ ...TOPOLOGY_DEFAULTS, ...overrides });
}

function nodes(topology: TopologyDriftDetector, shapes: NodeShape[], at = T0, initial = true): void {
  for (const shape of shapes) topology.observe("nodes", initial ? "add" : "update", node(shape), at, initial);
}

const threeZones = (ready: Partial<Record<string, boolean>> = {}): NodeShape[] =>
  ["a", "b", "c"].map((zone) => ({ name: `n-${zone}`, zone, ready: ready[zone] ?? true }));

test("domain_unavailable: a zone whose nodes are all unusable for the dwell is one critical finding; a usable node clears it", () => {
  const topology = detector();
  nodes(topology, threeZones());
  expect(topology.tick(T0)).toEqual([]);
  nodes(topology, [{ name: "n-c", zone: "c", ready: false }], T0 + MIN, false);
  expect(topology.tick(T0 + MIN + DWELL - 1)).toEqual([]);
  const fired = topology.tick(T0 + MIN + DWELL);
  expect(fired).toMatchObject([
    {
      kind: "leeway.domain_unavailable",
      reason: "domain_unavailable",
      uid: "domain:topology.kubernetes.io/zone=c",
      kindOfObject: "TopologyDomain",
      name: "c",
      namespace: "",
      severity: "critical",
    },
  ]);
  expect(fired[0]?.message).toContain("none of its 1 node(s) is Ready and schedulable");
  expect(topology.tick(T0 + MIN + 2 * DWELL)).toEqual([]);
  nodes(topology, [{ name: "n-c", zone: "c" }], T0 + 30 * MIN, false);
  expect(topology.tick(T0 + 31 * MIN)).toEqual([]);
  // Cleared: it fires again when the zone goes down again.
  nodes(topology, [{ name: "n-c", zone: "c", cordoned: true }], T0 + 40 * MIN, false);
  expect(topology.tick(T0 + 40 * MIN + DWELL)).toHaveLength(1);
});

test("usable means Ready, not cordoned, no lifecycle NoSchedule/NoExecute taint; a workload's own taint does not count", () => {
  const topology = detector({ dwellMs: 0 });
  nodes(topology, [
    { name: "n-a", zone: "a", taints: [{ key: "dedicated", effect: "NoSchedule" }] },
    { name: "n-b", zone: "b", taints: [{ key: "node.kubernetes.io/unreachable", effect: "NoExecute" }] },
  ]);
  expect(topology.tick(T0).map((signal) => signal.name)).toEqual(["b"]);
});

test("a zone unusable at startup is reported a dwell after the watcher saw it; region is an axis too", () => {
  const topology = detector();
  nodes(topology, [
    { name: "n-a", zone: "a", labels: { "topology.kubernetes.io/region": "r1" }, ready: false },
    { name: "n-b", zone: "b", labels: { "topology.kubernetes.io/region": "r1" } },
  ]);
  expect(topology.tick(T0 + DWELL - 1)).toEqual([]);
  expect(topology.tick(T0 + DWELL).map((signal) => signal.uid)).toEqual(["domain:topology.kubernetes.io/zone=a"]);
});

test("a domain whose last node is deleted while usable shrank (forgotten); deleted while unusable it died (reported, forgotten a day later)", () => {
  const topology = detector();
  nodes(topology, threeZones());
  topology.observe("nodes", "delete", node({ name: "n-c", zone: "c" }), T0 + MIN, false);
  expect(topology.tick(T0 + MIN + DWELL)).toEqual([]);
  nodes(topology, [{ name: "n-b", zone: "b", ready: false }], T0 + 2 * MIN, false);
  topology.observe("nodes", "delete", node({ name: "n-b", zone: "b", ready: false }), T0 + 3 * MIN, false);
  const fired = topology.tick(T0 + 2 * MIN + DWELL);
  expect(fired.map((signal) => signal.name)).toEqual(["b"]);
  expect(fired[0]?.message).toContain("its last node was deleted while not usable");
  // a, and b remembered while dead; c is gone.
  expect(topology.size.domains).toBe(2);
  topology.tick(T0 + 3 * MIN + 24 * 60 * MIN);
  expect(topology.size.domains).toBe(1);
});

test("--topology-domain-unavailable-keys empty turns the finding off", () => {
  const topology = detector({ unavailableKeys: [], dwellMs: 0 });
  nodes(topology, threeZones({ c: false }));
  expect(topology.tick(T0)).toEqual([]);
});

function placePods(topology: TopologyDriftDetector, owner: string, zones: string[], at = T0, initial = false): void {
  zones.forEach((zone, index) => {
    topology.observe("pods", "add", pod({ name: `${owner}-${index}`, owner, node: `n-${zone}` }), at, initial);
  });
}

test("tier A: a DoNotSchedule spread beyond maxSkew for the dwell is one spread_drift on the Deployment; rebalanced, it clears", () => {
  const topology = detector();
  nodes(topology, threeZones());
  topology.observe("deployments", "add", deployment("web", spreadConstraint(1, "DoNotSchedule")), T0, true);
  placePods(topology, "web", ["a", "a", "a", "b"], T0, true);
  expect(topology.tick(T0)).toEqual([]);
  expect(topology.tick(T0 + DWELL - 1)).toEqual([]);
  const [signal, ...rest] = topology.tick(T0 + DWELL);
  expect(rest).toEqual([]);
  expect(signal).toMatchObject({
    kind: "leeway.spread_drift",
    reason: "spread_drift",
    uid: "deploy-web",
    kindOfObject: "Deployment",
    namespace: "shop",
    name: "web",
    severity: "warning",
  });
  expect(signal?.message).toContain("a=3, b=1, c=0");
  expect(signal?.message).toContain("skew 3 beyond maxSkew 1 (spread constraint), tier A");
  expect(topology.tick(T0 + 2 * DWELL)).toEqual([]);
  topology.observe("pods", "update", pod({ name: "web-1", owner: "web", node: "n-c" }), T0 + 21 * MIN, false);
  expect(topology.tick(T0 + 21 * MIN)).toEqual([]);
  topology.observe("pods", "update", pod({ name: "web-1", owner: "web", node: "n-a" }), T0 + 22 * MIN, false);
  expect(topology.tick(T0 + 22 * MIN)).toEqual([]);
  expect(topology.tick(T0 + 22 * MIN + DWELL)).toHaveLength(1);
});

test("a drift that ends before the dwell never fires; pods on an unusable zone do not count, its domain is not eligible", () => {
  const topology = detector();
  nodes(topology, threeZones());
  topology.observe("deployments", "add", deployment("web", spreadConstraint(1, "DoNotSchedule")), T0, true);
  placePods(topology, "web", ["a", "a", "b", "c"]);
  expect(topology.tick(T0)).toEqual([]);
  expect(topology.tick(T0 + DWELL)).toEqual([]);
  // Zone c goes down: its pod is ignored, c is no longer eligible: a=2, b=1 → skew 1.
  nodes(topology, [{ name: "n-c", zone: "c", ready: false }], T0 + DWELL, false);
  const signals = topology.tick(T0 + 3 * DWELL);
  expect(signals.map((signal) => signal.kind)).toEqual(["leeway.domain_unavailable"]);
});

test("tier B: the upstream default (zone maxSkew 5, ScheduleAnyway) stands in for a template without constraints", () => {
  const topology = detector({ dwellMs: 0 });
  nodes(topology, threeZones());
  placePods(topology, "api", ["a", "a", "a", "a", "a"]);
  expect(topology.tick(T0)).toEqual([]);
  placePods(topology, "api", ["a", "a", "a", "a", "a", "a"]);
  const [signal] = topology.tick(T0 + MIN);
  expect(signal?.message).toContain("maxSkew 5 (cluster default), tier B");
  // The pod's owner is the ReplicaSet: without the Deployment watched, the uid is synthetic.
  expect(signal?.uid).toBe("workload:shop/Deployment/api");
});

test("tier B: preferred anti-affinity on the axis tolerates skew 1; a template's own constraint disables the cluster defaults", () => {
  const topology = detector({ dwellMs: 0 });
  nodes(topology, threeZones());
  const preferred = {
    affinity: {
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          { weight: 100, podAffinityTerm: { topologyKey: "topology.kubernetes.io/zone" } },
        ],
      },
    },
  };
  topology.observe("deployments", "add", deployment("web", preferred), T0, true);
  placePods(topology, "web", ["a", "b", "c"]);
  expect(topology.tick(T0)).toEqual([]);
  topology.observe("pods", "add", pod({ name: "web-extra", owner: "web", node: "n-a" }), T0, false);
  expect(topology.tick(T0 + MIN)).toEqual([]);
  topology.observe("pods", "add", pod({ name: "web-extra2", owner: "web", node: "n-a" }), T0, false);
  expect(topology.tick(T0 + MIN)[0]?.message).toContain("maxSkew 1 (anti-affinity), tier B");
  // A hostname constraint alone: the zone defaults no longer apply, the zone axis is tier C (not sent).
  const own = detector({ dwellMs: 0, learnBaselines: false });
  nodes(own, threeZones());
  own.observe(
    "deployments",
    "add",
    deployment("api", spreadConstraint(1, "ScheduleAnyway", "kubernetes.io/hostname")),
    T0,
    true,
  );
  placePods(own, "api", ["a", "a", "a", "a", "a", "a", "a"]);
  expect(own.tick(T0)).toEqual([]);
  expect(own.judged.get("shop/Deployment/api")?.[0]).toMatchObject({ drifting: true, intent: { tier: "C" } });
});

test("tier C (no intent, --topology-cluster-defaults=none): judged but sent only with tier-C signals", () => {
  const quiet = detector({ dwellMs: 0, defaults: [], learnBaselines: false });
  const loud = detector({ dwellMs: 0, defaults: [], learnBaselines: false, tierCSignals: true });
  for (const topology of [quiet, loud]) {
    nodes(topology, threeZones());
    placePods(topology, "api", ["a", "a", "a"]);
  }
  expect(quiet.tick(T0)).toEqual([]);
  expect(quiet.series().find((family) => family.name === "leeway_drifting_subjects")?.samples).toContainEqual({
    labels: { tier: "C" },
    value: 1,
  });
  expect(loud.tick(T0)[0]?.message).toContain("an even spread (skew at most 1; no intent declared), tier C");
});

test("tier C with a learned baseline: nothing until a half-life of history; a skew above the band then drifts", () => {
  const halfLife = 60 * MIN;
  const topology = detector({ dwellMs: 0, defaults: [], tierCSignals: true, baselineHalfLifeMs: halfLife });
  nodes(topology, threeZones());
  placePods(topology, "api", ["a", "b", "c", "a"]);
  let at = T0;
  // A long-standing skew of 1 is learned, never reported.
  for (; at <= T0 + 2 * halfLife; at += 10 * MIN) expect(topology.tick(at)).toEqual([]);
  placePods(topology, "api", ["a", "a", "a", "a", "a", "a"]);
  const [signal] = topology.tick(at);
  expect(signal?.message).toContain("its learned baseline");
  // Before a half-life, a fresh subject is not judged even at a large skew.
  const fresh = detector({ dwellMs: 0, defaults: [], tierCSignals: true, baselineHalfLifeMs: halfLife });
  nodes(fresh, threeZones());
  placePods(fresh, "api", ["a", "a", "a", "a", "a", "a"]);
  expect(fresh.tick(T0)).toEqual([]);
  expect(fresh.tick(T0 + halfLife - 1)).toEqual([]);
});

test("DaemonSet and bare pods are no subject; deleting every pod and the workload forgets the subject", () => {
  const topology = detector();
  nodes(topology, threeZones());
  topology.observe("pods", "add", pod({ name: "agent", owner: "ds:agent", node: "n-a" }), T0, false);
  expect(topology.size.pods).toBe(0);
  topology.observe("deployments", "add", deployment("web"), T0, false);
  placePods(topology, "web", ["a", "b"]);
  topology.tick(T0);
  expect(topology.size).toMatchObject({ subjects: 1, pods: 2, judged: 1 });
  for (const index of [0, 1])
    topology.observe("pods", "delete", pod({ name: `web-${index}`, owner: "web", node: "n-a" }), T0, false);
  expect(topology.size.subjects).toBe(1);
  topology.observe("deployments", "delete", deployment("web"), T0, false);
  topology.tick(T0 + MIN);
  expect(topology.size).toMatchObject({ subjects: 0, pods: 0, judged: 0 });
});

test("node groups: usable nodes per zone beyond the capacity ratio drift (a NodeGroup finding); the cap leaves the rest untracked", () => {
  const pool = (name: string, zone: string, group: string, ready = true): NodeShape => ({
    name,
    zone,
    ready,
    labels: { "cloud.google.com/gke-nodepool": group },
  });
  const topology = detector({ dwellMs: 0, maxNodeGroups: 1 });
  nodes(topology, [
    pool("p1", "a", "pool-1"),
    pool("p2", "a", "pool-1"),
    pool("p3", "b", "pool-1"),
    pool("q1", "a", "pool-2"),
  ]);
  expect(topology.tick(T0)).toEqual([]);
  nodes(topology, [pool("p4", "a", "pool-1")], T0, false);
  const [signal] = topology.tick(T0 + MIN);
  expect(signal).toMatchObject({
    kind: "leeway.spread_drift",
    kindOfObject: "NodeGroup",
    uid: "nodegroup:cloud.google.com/gke-nodepool=pool-1",
  });
  expect(signal?.message).toContain("largest/smallest 3.00 above --topology-capacity-ratio 1.25");
  const untracked = topology.series().find((family) => family.name === "leeway_node_groups_untracked");
  expect(untracked?.samples).toEqual([{ labels: {}, value: 1 }]);
  const off = detector({ dwellMs: 0, maxNodeGroups: -1 });
  nodes(off, [
    pool("p1", "a", "pool-1"),
    pool("p2", "a", "pool-1"),
    pool("p3", "a", "pool-1"),
    pool("p4", "b", "pool-1"),
  ]);
  expect(off.tick(T0)).toEqual([]);
});

function family(topology: TopologyDriftDetector, name: string) {
  return topology.series().find((one) => one.name === `leeway_${name}`)?.samples ?? [];
}

test("per-domain series: a drifting subject's objects by state and even share; balanced subjects below min-drift are not exported", () => {
  const topology = detector();
  nodes(topology, threeZones());
  placePods(topology, "web", ["a", "a", "a"]);
  topology.observe(
    "pods",
    "add",
    pod({ name: "web-p", owner: "web", spec: { nodeSelector: { "topology.kubernetes.io/zone": "b" } } }),
    T0,
    false,
  );
  placePods(topology, "even", ["a", "b", "c"]);
  topology.tick(T0);
  const base = { namespace: "shop", subject_kind: "Deployment", subject: "web", key: "topology.kubernetes.io/zone" };
  expect(family(topology, "domain_objects")).toEqual([
    { labels: { ...base, domain: "a", state: "active" }, value: 3 },
    { labels: { ...base, domain: "b", state: "active" }, value: 0 },
    { labels: { ...base, domain: "c", state: "active" }, value: 0 },
    { labels: { ...base, domain: "b", state: "waiting" }, value: 1 },
  ]);
  expect(family(topology, "domain_expected")).toContainEqual({ labels: { ...base, domain: "c" }, value: 1 });
  expect(family(topology, "domain_series_withheld")).toEqual([
    { labels: { reason: "key_cap" }, value: 0 },
    { labels: { reason: "namespace" }, value: 0 },
  ]);
  expect(family(topology, "domain_objects").some((sample) => sample.labels.subject === "even")).toBe(false);
  const scoredOnly = detector({ perDomain: { ...TOPOLOGY_DEFAULTS.perDomain, minDrift: -1 } });
  nodes(scoredOnly, threeZones());
  placePods(scoredOnly, "even", ["a", "b", "c"]);
  scoredOnly.tick(T0);
  expect(family(scoredOnly, "domain_objects")).toHaveLength(3);
  const every = detector({ perDomain: { ...TOPOLOGY_DEFAULTS.perDomain, every: true, collapseStates: false } });
  nodes(every, threeZones());
  placePods(every, "even", ["a", "b", "c"]);
  every.tick(T0);
  expect(family(every, "domain_objects").map((sample) => sample.labels.state)).toEqual([
    "running",
    "running",
    "running",
  ]);
});

test("per-domain series: axes past max-keys are withheld as key_cap, excluded namespaces as namespace", () => {
  const regionNodes = threeZones().map((shape) => ({
    ...shape,
    labels: { "topology.kubernetes.io/region": shape.name === "n-a" ? "r1" : "r2" },
  }));
  const capped = detector({ perDomain: { ...TOPOLOGY_DEFAULTS.perDomain, every: true, maxKeys: 1 } });
  nodes(capped, regionNodes);
  placePods(capped, "web", ["a", "b"]);
  capped.tick(T0);
  expect(family(capped, "domain_objects").every((sample) => sample.labels.key === "topology.kubernetes.io/zone")).toBe(
    true,
  );
  // The region axis: two domains, one active row each and one expected row each.
  expect(family(capped, "domain_series_withheld")).toContainEqual({ labels: { reason: "key_cap" }, value: 4 });
  const scoped = detector({
    perDomain: { ...TOPOLOGY_DEFAULTS.perDomain, every: true, excludeNamespaces: ["shop"], namespaces: ["shop"] },
  });
  nodes(scoped, threeZones());
  placePods(scoped, "web", ["a", "b"]);
  scoped.tick(T0);
  expect(family(scoped, "domain_objects")).toEqual([]);
  expect(family(scoped, "domain_series_withheld")).toContainEqual({ labels: { reason: "namespace" }, value: 6 });
});

test("the first list fills state: a drift present at startup is reported only a dwell after the watcher saw it", () => {
  const topology = detector();
  nodes(topology, threeZones());
  let signals: Signal[] = [];
  topology.observe("deployments", "add", deployment("web", spreadConstraint(1, "DoNotSchedule")), T0, true);
  placePods(topology, "web", ["a", "a", "a"], T0, true);
  signals = topology.tick(T0 + MIN);
  expect(signals).toEqual([]);
  expect(topology.tick(T0 + MIN + DWELL)).toHaveLength(1);
});

const BASE = ["--daemon-url=http://127.0.0.1:1", "--token-env=T"];

test("the settings from the flags: short key names, an empty unavailable list, cluster defaults, per-domain lists", () => {
  const plain = watcherConfigFromArgv(BASE);
  const flagged = watcherConfigFromArgv([
    ...BASE,
    "--topology-keys=zone,hostname,example.com/rack",
    "--topology-domain-unavailable-keys=",
    "--topology-dwell=0s",
    "--topology-cluster-defaults=zone=2:DoNotSchedule,example.com/rack=3",
    "--topology-tier-c-signals",
    "--topology-learn-baselines=false",
    "--topology-baseline-band=2",
    "--topology-baseline-half-life=1h",
    "--topology-capacity-ratio=2",
    "--topology-node-group-keys=example.com/pool",
    "--topology-max-node-groups=-1",
    "--topology-per-domain-collapse-states=false",
    "--topology-per-domain-exclude-namespaces=kube-system",
    "--topology-per-domain-namespaces=shop,web",
    "--topology-per-domain-max-keys=-1",
    "--topology-per-domain-min-drift=-1",
    "--topology-per-domain-series",
  ]);
  if (!plain.ok || !flagged.ok) throw new Error("config refused");
  expect(sourceSettings("topology-drift", plain.value)).toEqual(TOPOLOGY_DEFAULTS);
  expect(sourceSettings("topology-drift", flagged.value)).toEqual({
    keys: ["topology.kubernetes.io/zone", "kubernetes.io/hostname", "example.com/rack"],
    unavailableKeys: [],
    dwellMs: 0,
    domainMemoryMs: TOPOLOGY_DEFAULTS.domainMemoryMs,
    nodeGroupKeys: ["example.com/pool"],
    maxNodeGroups: -1,
    defaults: [
      { key: "topology.kubernetes.io/zone", maxSkew: 2, tier: "A" },
      { key: "example.com/rack", maxSkew: 3, tier: "B" },
    ],
    tierCSignals: true,
    learnBaselines: false,
    baselineBand: 2,
    baselineHalfLifeMs: 60 * MIN,
    capacityRatio: 2,
    perDomain: {
      collapseStates: false,
      excludeNamespaces: ["kube-system"],
      namespaces: ["shop", "web"],
      maxKeys: -1,
      minDrift: -1,
      every: true,
    },
  });
  const none = watcherConfigFromArgv([...BASE, "--topology-cluster-defaults=none"]);
  if (!none.ok) throw new Error("config refused");
  expect(sourceSettings("topology-drift", none.value)).toMatchObject({ defaults: [] });
});

test("bad topology lists are refused naming the flag", () => {
  const refusal = (flag: string) => {
    const result = watcherConfigFromArgv([...BASE, flag]);
    return result.ok ? "" : result.error;
  };
  expect(refusal("--topology-keys=")).toContain("--topology-keys needs at least one node label");
  expect(refusal("--topology-keys=zone,bad key")).toContain('--topology-keys: "bad key" is not a node label key');
  expect(refusal("--topology-node-group-keys=/x")).toContain("--topology-node-group-keys");
  expect(refusal("--topology-per-domain-namespaces=Shop")).toContain('"Shop" is not a namespace name');
  expect(refusal("--topology-cluster-defaults=zone=0")).toContain("--topology-cluster-defaults: bad entry");
});

test("the skew and drift score: whole pods as even as they can be score 0; minDomains above the domains counts the minimum as 0", () => {
  expect(
    spread(
      new Map([
        ["a", 2],
        ["b", 2],
        ["c", 1],
      ]),
      1,
    ),
  ).toMatchObject({ total: 5, skew: 1, score: 0 });
  expect(
    spread(
      new Map([
        ["a", 4],
        ["b", 1],
        ["c", 0],
      ]),
      1,
    ),
  ).toMatchObject({ skew: 4, score: 0.4 });
  expect(
    spread(
      new Map([
        ["a", 2],
        ["b", 2],
      ]),
      3,
    ),
  ).toMatchObject({ skew: 2 });
});
