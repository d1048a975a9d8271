/**
 * The compute-class detector (D411, D412): a class whose pods wait Unschedulable with no progress
 * for the dwell is one critical rank_wedged, cleared by progress; rank shares over a full window
 * past the floor or the ceiling are one rank_degraded; pods left on fallback ranks after rank 0
 * gained capacity are one rank_no_migration; a declared priority with no node for a window is on
 * the gauge, and on the wire only with tier-C signals; annotated and inferred ranks that differ
 * are counted; only class nodes and pinned pods are kept.
 */
import { expect, test } from "bun:test";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { COMPUTE_CLASS_SPEC, ComputeClassDetector } from "../../../src/watcher/core/sources/compute-class-detector.ts";
import {
  COMPUTE_CLASS_DEFAULTS,
  type ComputeClassSettings,
} from "../../../src/watcher/core/sources/compute-class-rules.ts";
import { sourceSettings } from "../../../src/watcher/sources/source-registry.ts";
import { CLASS, MIN, node, pod, T0 } from "./leeway-objects.ts";

const DWELL = 10 * MIN;
const WINDOW = 60 * MIN;
const RANK = "compute-class.spar.dev/rank";

function detector(overrides: Partial<ComputeClassSettings> = {}): ComputeClassDetector {
  return new ComputeClassDetector({ ...COMPUTE_CLASS_DEFAULTS, ...overrides });
}

function classNode(
  name: string,
  rank: number | undefined,
  extra: { ready?: boolean; labels?: Record<string, string> } = {},
) {
  return node({
    name,
    ready: extra.ready ?? true,
    labels: { [CLASS]: "batch", ...(extra.labels ?? {}) },
    ...(rank === undefined ? {} : { annotations: { [RANK]: String(rank) } }),
  });
}

const pinned = { nodeSelector: { [CLASS]: "batch" } };

function classPod(name: string, nodeName?: string, since?: number) {
  return pod({
    name,
    owner: "jobs",
    spec: pinned,
    ...(nodeName ? { node: nodeName } : {}),
    ...(since !== undefined ? { since } : {}),
  });
}

test("rank_wedged: pods Unschedulable with no pod placed and no node joining for the dwell is one critical; progress clears it", () => {
  const compute = detector();
  compute.observe("nodes", "add", classNode("r0", 0, { ready: false }), T0, true);
  compute.observe("nodes", "add", classNode("r1", 1, { ready: false }), T0, true);
  compute.observe("pods", "add", classPod("p1", undefined, T0), T0, false);
  expect(compute.tick(T0 + DWELL - 1)).toEqual([]);
  const [signal, ...rest] = compute.tick(T0 + DWELL);
  expect(rest).toEqual([]);
  expect(signal).toMatchObject({
    kind: "leeway.rank_wedged",
    reason: "rank_wedged",
    uid: "computeclass:batch",
    kindOfObject: "ComputeClass",
    name: "batch",
    namespace: "",
    severity: "critical",
  });
  expect(signal?.message).toContain("1 pod(s) Unschedulable");
  expect(signal?.message).toContain("usable/all nodes by rank 0: 0/1, 1: 0/1");
  expect(compute.tick(T0 + 2 * DWELL)).toEqual([]);
  // A usable node joins: progress, cleared; still stuck a dwell later, it fires again.
  compute.observe("nodes", "update", classNode("r1", 1), T0 + 25 * MIN, false);
  expect(compute.tick(T0 + 25 * MIN)).toEqual([]);
  expect(compute.tick(T0 + 25 * MIN + DWELL)).toHaveLength(1);
});

test("rank_wedged: a pod placed is progress; at startup the dwell counts from when the watcher saw the class", () => {
  const compute = detector();
  compute.observe("pods", "add", classPod("old", undefined, T0 - 60 * MIN), T0, true);
  expect(compute.tick(T0 + DWELL - 1)).toEqual([]);
  expect(compute.tick(T0 + DWELL)).toHaveLength(1);
  const placing = detector();
  placing.observe("pods", "add", classPod("a", undefined, T0), T0, true);
  placing.observe("pods", "add", classPod("b", undefined, T0), T0, true);
  placing.observe("nodes", "add", classNode("r0", 0), T0, true);
  placing.observe("pods", "update", classPod("a", "r0"), T0 + DWELL - MIN, false);
  expect(placing.tick(T0 + DWELL)).toEqual([]);
});

function placed(compute: ComputeClassDetector, ranks: number[], at: number, initial = false): void {
  for (const [index, rank] of ranks.entries())
    compute.observe("pods", "add", classPod(`p${index}`, `r${rank}`), at, initial);
}

test("rank_degraded: the last rank's mean share above the ceiling over a full window, not before; back on rank 0 it clears", () => {
  const compute = detector();
  compute.observe("nodes", "add", classNode("r0", 0), T0, true);
  compute.observe("nodes", "add", classNode("r1", 1), T0, true);
  placed(compute, [1, 1, 1, 1, 1, 1, 1, 1, 1, 1], T0, true);
  let at = T0;
  for (; at < T0 + WINDOW; at += 5 * MIN) expect(compute.tick(at)).toEqual([]);
  const [signal] = compute.tick(at);
  expect(signal).toMatchObject({ kind: "leeway.rank_degraded", severity: "warning", uid: "computeclass:batch" });
  expect(signal?.message).toContain(
    "100% of its placed pods ran on its last rank 1, above --compute-class-last-rank-ceiling 90%",
  );
  expect(compute.tick(at + 5 * MIN)).toEqual([]);
  placed(compute, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0], at);
  let later = at + 5 * MIN;
  for (; later <= at + WINDOW + 5 * MIN; later += 5 * MIN) expect(compute.tick(later)).toEqual([]);
  expect(compute.series().find((family) => family.name === "leeway_rank_pods")?.samples).toEqual([
    { labels: { class: "batch", rank: "0" }, value: 10 },
  ]);
  // Cleared: back on the last rank for a window, it fires again.
  placed(compute, [1, 1, 1, 1, 1, 1, 1, 1, 1, 1], later);
  const again: string[] = [];
  for (const end = later + WINDOW; later <= end; later += 5 * MIN)
    again.push(...compute.tick(later).map((one) => one.kind));
  expect(again).toEqual(["leeway.rank_degraded"]);
});

test("rank_degraded: the rank-0 floor when set; a ceiling of 0 turns the last-rank rule off; one rank has no last-rank rule", () => {
  const floor = detector({ rank0Floor: 0.5, lastRankCeiling: 0 });
  floor.observe("nodes", "add", classNode("r0", 0), T0, true);
  floor.observe("nodes", "add", classNode("r1", 1), T0, true);
  placed(floor, [0, 0, 0, 1, 1, 1, 1, 1, 1, 1], T0, true);
  floor.tick(T0);
  expect(floor.tick(T0 + WINDOW)[0]?.message).toContain(
    "30% of its placed pods ran on rank 0, below --compute-class-rank0-floor 50%",
  );
  const off = detector({ lastRankCeiling: 0 });
  off.observe("nodes", "add", classNode("r1", 1), T0, true);
  placed(off, [1, 1], T0, true);
  off.tick(T0);
  expect(off.tick(T0 + WINDOW)).toEqual([]);
  const single = detector();
  single.observe("nodes", "add", classNode("r0", 0), T0, true);
  placed(single, [0, 0], T0, true);
  single.tick(T0);
  expect(single.tick(T0 + WINDOW)).toEqual([]);
});

test("rank_no_migration: rank 0 gains capacity while pods run on fallbacks; still there a dwell later is one warning; moved, it clears", () => {
  const compute = detector({ lastRankCeiling: 0 });
  compute.observe("nodes", "add", classNode("r0", 0, { ready: false }), T0, true);
  compute.observe("nodes", "add", classNode("r1", 1), T0, true);
  placed(compute, [1, 1, 1], T0, true);
  expect(compute.tick(T0)).toEqual([]);
  compute.observe("nodes", "update", classNode("r0", 0), T0 + MIN, false);
  expect(compute.tick(T0 + MIN)).toEqual([]);
  expect(compute.tick(T0 + MIN + DWELL - 1)).toEqual([]);
  const [signal] = compute.tick(T0 + MIN + DWELL);
  expect(signal).toMatchObject({ kind: "leeway.rank_no_migration", severity: "warning" });
  expect(signal?.message).toContain("3 pod(s) stayed on fallback ranks");
  placed(compute, [0, 0, 0], T0 + 20 * MIN);
  expect(compute.tick(T0 + 20 * MIN)).toEqual([]);
  expect(compute.tick(T0 + 40 * MIN)).toEqual([]);
});

const declared = {
  items: [
    {
      metadata: { name: "batch" },
      spec: { priorities: [{ machineFamily: "n2" }, { machineFamily: "e2", spot: true }, { nodepools: ["fallback"] }] },
    },
  ],
};

test("a declared priority with no node for a window: the gauge shows it; the finding is sent only with tier-C signals", () => {
  for (const tierCSignals of [false, true]) {
    const compute = detector({ tierCSignals });
    compute.polled("computeclasses", declared);
    compute.observe("nodes", "add", classNode("a", 0), T0, true);
    compute.observe("nodes", "add", classNode("b", 1), T0, true);
    expect(compute.tick(T0)).toEqual([]);
    const signals = compute.tick(T0 + WINDOW);
    expect(signals.map((signal) => signal.kind)).toEqual(tierCSignals ? ["leeway.rank_tier_unused"] : []);
    expect(compute.series().find((family) => family.name === "leeway_rank_unused")?.samples).toEqual([
      { labels: { class: "batch", rank: "0" }, value: 0 },
      { labels: { class: "batch", rank: "1" }, value: 0 },
      { labels: { class: "batch", rank: "2" }, value: 1 },
    ]);
  }
});

test("inference: the first matching priority; the annotation wins and a disagreement is counted; --compute-class-infer=false infers nothing", () => {
  const e2spot = { "cloud.google.com/machine-family": "e2", "cloud.google.com/gke-spot": "true" };
  for (const infer of [true, false]) {
    const compute = detector({ infer });
    compute.polled("computeclasses", declared);
    compute.observe("nodes", "add", classNode("agrees", 1, { labels: e2spot }), T0, true);
    compute.observe("nodes", "add", classNode("disagrees", 0, { labels: e2spot }), T0, true);
    compute.observe(
      "nodes",
      "add",
      classNode("inferred", undefined, { labels: { "cloud.google.com/gke-nodepool": "fallback" } }),
      T0,
      true,
    );
    compute.observe("pods", "add", classPod("p", "inferred"), T0, true);
    expect(compute.series().find((family) => family.name === "leeway_preference_disagreement")?.samples).toEqual([
      { labels: { class: "batch" }, value: infer ? 1 : 0 },
    ]);
    expect(compute.series().find((family) => family.name === "leeway_rank_pods")?.samples).toEqual(
      infer ? [{ labels: { class: "batch", rank: "2" }, value: 1 }] : [],
    );
  }
});

test("only class nodes and pinned pods are kept; deletes forget; a class with nothing left is forgotten", () => {
  const compute = detector();
  compute.observe("nodes", "add", node({ name: "plain" }), T0, true);
  compute.observe("pods", "add", pod({ name: "loose", owner: "web", node: "plain" }), T0, true);
  expect(compute.size).toEqual({ nodes: 0, pods: 0, classes: 0 });
  compute.observe("nodes", "add", classNode("r0", 0), T0, true);
  compute.observe("pods", "add", classPod("p", "r0"), T0, true);
  compute.tick(T0);
  expect(compute.size).toEqual({ nodes: 1, pods: 1, classes: 1 });
  compute.observe("pods", "delete", classPod("p", "r0"), T0, false);
  compute.observe("nodes", "delete", classNode("r0", 0), T0, false);
  compute.tick(T0 + MIN);
  expect(compute.size).toEqual({ nodes: 0, pods: 0, classes: 0 });
});

test("the spec and the settings from the flags", () => {
  expect(COMPUTE_CLASS_SPEC.required.map((check) => `${check.verb} ${check.resource}`)).toEqual([
    "list nodes",
    "watch nodes",
    "list pods",
    "watch pods",
  ]);
  expect(COMPUTE_CLASS_SPEC.polls?.[0]?.discovery).toEqual({
    groupVersion: "cloud.google.com/v1",
    resource: "computeclasses",
  });
  const base = ["--daemon-url=http://127.0.0.1:1", "--token-env=T"];
  const plain = watcherConfigFromArgv(base);
  const flagged = watcherConfigFromArgv([
    ...base,
    "--compute-class-dwell=2m",
    "--compute-class-infer=false",
    "--compute-class-last-rank-ceiling=0",
    "--compute-class-rank0-floor=0.4",
    "--compute-class-tier-c-signals",
    "--compute-class-window=30m",
  ]);
  if (!plain.ok || !flagged.ok) throw new Error("config refused");
  expect(sourceSettings("compute-class", plain.value)).toEqual(COMPUTE_CLASS_DEFAULTS);
  expect(sourceSettings("compute-class", flagged.value)).toEqual({
    dwellMs: 2 * MIN,
    infer: false,
    lastRankCeiling: 0,
    rank0Floor: 0.4,
    tierCSignals: true,
    windowMs: 30 * MIN,
  });
});
