/**
 * The occurrence store's memory (D424-D426): distillation folds rows into facts per (cluster,
 * kind, reason, namespace, workload) with counts, first/last seen, mean time to resolve and
 * recurrences, incrementally and bounded; the facts and the graph snapshot live in the store's
 * file under its TTL and size bound; the snapshot codec round-trips what the graph reads and
 * refuses a corrupt snapshot; the graph restores from it and prunes tombstones after 2 h.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { type DistillState, distill, factClass, factKey, meanResolveMs } from "../../../src/watcher/core/distill.ts";
import { decodeGraph, encodeGraph } from "../../../src/watcher/core/graph-snapshot.ts";
import { type OccurrenceRow, type Route, workloadOf } from "../../../src/watcher/core/occurrence.ts";
import type { Signal } from "../../../src/watcher/core/signal.ts";
import { OccurrenceStore } from "../../../src/watcher/occurrence-store.ts";
import { ClusterGraph, MAX_TOMBSTONES, TOMBSTONE_TTL_MS } from "../../../src/watcher/sources/cluster-graph.ts";
import { WatcherMetrics } from "../../../src/watcher/watcher-metrics.ts";
import { tempDir } from "../../support/daemon.ts";

const MIN = 60_000;
const HOUR = 60 * MIN;

function row(at: number, route: Route, uid: string, extra: Partial<OccurrenceRow> = {}): OccurrenceRow {
  return {
    at,
    route,
    kind: "cluster-event",
    severity: "critical",
    reason: "BackOff",
    namespace: "shop",
    kindOfObject: "Pod",
    name: `web-${uid}`,
    uid,
    cluster: "prod",
    workload: "Deployment/web",
    ...extra,
  };
}

const resolved = (at: number, uid: string) =>
  row(at, "resolved", uid, { kind: "resolved", severity: "info", workload: "" });
const empty = (): DistillState => ({ facts: new Map(), open: new Map() });

describe("distillation (D424)", () => {
  test("one fact per workload and reason: counts, routes, first/last seen, mean time to resolve, recurrence", () => {
    const state = empty();
    distill(state, [
      row(0, "injected", "a", { sessionId: "sess-1" }),
      row(1 * MIN, "suppressed", "a"),
      row(2 * MIN, "storm-member", "b", { severity: "warning" }),
      resolved(10 * MIN, "a"),
      resolved(22 * MIN, "b"),
      // The same workload fails again after resolving: a recurrence.
      row(30 * MIN, "injected", "c", { sessionId: "sess-2" }),
      row(31 * MIN, "info-stored", "d", { reason: "Scheduled", severity: "info" }),
    ]);
    const fact = state.facts.get(
      factKey({
        cluster: "prod",
        kind: "cluster-event",
        reason: "BackOff",
        namespace: "shop",
        workload: "Deployment/web",
      }),
    );
    expect(fact).toMatchObject({
      severity: "critical",
      occurrences: 4,
      incidents: 3,
      resolved: 2,
      recurrences: 1,
      firstSeen: 0,
      lastSeen: 30 * MIN,
      lastResolved: 22 * MIN,
      lastSession: "sess-2",
      routes: { injected: 2, suppressed: 1, "storm-member": 1 },
    });
    expect(fact && meanResolveMs(fact)).toBe(15 * MIN);
    expect(fact && factClass(fact)).toBe("recurring");
    expect(state.facts.size).toBe(2);
    expect(state.open.size).toBe(2);
  });

  test("incremental: an incident opened in one run resolves in the next; the bounds hold", () => {
    const state = empty();
    distill(state, [row(0, "injected", "a")]);
    const touched = distill(state, [resolved(5 * MIN, "a")]);
    const [fact] = [...state.facts.values()];
    expect(touched.size).toBe(1);
    expect(fact && meanResolveMs(fact)).toBe(5 * MIN);
    expect(fact && factClass(fact)).toBe("resolved");
    const many = Array.from({ length: 50 }, (_, i) => row(i, "injected", `u${i}`, { workload: `Deployment/w${i}` }));
    distill(state, many, { maxFacts: 10, maxOpen: 5 });
    expect(state.facts.size).toBe(10);
    expect(state.open.size).toBe(5);
    // The least recently seen went first.
    expect([...state.facts.values()].map((kept) => kept.workload)).toContain("Deployment/w49");
  });

  test("the workload: a ReplicaSet folds into its Deployment, a Deployment's pod is read from its name", () => {
    const signal = (fields: Partial<Signal>) =>
      workloadOf({ kindOfObject: "Pod", name: "x", ...fields } as Pick<Signal, "kindOfObject" | "name">);
    expect(signal({ controllerRef: "ReplicaSet/checkout-7b9d5c8f4" })).toBe("Deployment/checkout");
    expect(signal({ controllerRef: "StatefulSet/db" })).toBe("StatefulSet/db");
    expect(signal({ name: "checkout-7b9d5c8f4-x4kzq" })).toBe("Deployment/checkout");
    expect(signal({ name: "db-0" })).toBe("");
    expect(signal({ kindOfObject: "Node", name: "node-a" })).toBe("Node/node-a");
  });

  test("in the store: facts are written as rows, each run reads only new rows, classes are counted", () => {
    const metrics = new WatcherMetrics("prod");
    const store = new OccurrenceStore({
      path: join(tempDir(), "facts.db"),
      maxBytes: 64 << 20,
      ttlMs: 1000 * HOUR,
      metrics,
    });
    store.record(row(0, "injected", "a"));
    store.record(row(MIN, "suppressed", "a"));
    expect(store.distillQuietly()).toEqual({ rows: 2, facts: 1 });
    store.record(resolved(4 * MIN, "a"));
    expect(store.distillQuietly()).toEqual({ rows: 1, facts: 1 });
    expect(store.distillQuietly()).toEqual({ rows: 0, facts: 0 });
    const [fact] = store.memory.facts();
    expect(fact).toMatchObject({
      class: "resolved",
      occurrences: 2,
      incidents: 1,
      resolved: 1,
      meanResolveMs: 4 * MIN,
    });
    expect(metrics.render()).toContain('watcher_memory_facts_total{class="open",cluster="prod"} 1');
    expect(metrics.render()).toContain('watcher_memory_facts_total{class="resolved",cluster="prod"} 1');
    store.close();
  });

  test("--store-ttl prunes facts not seen since; --store-max-mb distills rows before dropping them", () => {
    let clock = 0;
    const path = join(tempDir(), "bounded.db");
    const store = new OccurrenceStore({
      path,
      maxBytes: 256 * 1024,
      ttlMs: 10 * HOUR,
      now: () => clock,
      distill: true,
      batch: 1000,
    });
    for (let i = 0; i < 20_000; i++) store.record(row(i, "injected", `u${i}`, { name: `web-${i}-${"x".repeat(40)}` }));
    store.flush();
    expect(store.usedBytes()).toBeLessThanOrEqual(256 * 1024);
    const [fact] = store.memory.facts();
    // Every row reached the fact even though most were pruned for size.
    expect(fact?.occurrences).toBeGreaterThan(store.count());
    expect((fact?.occurrences ?? 0) + store.memory.pending()).toBeGreaterThanOrEqual(20_000 - 1000);
    clock = 11 * HOUR;
    store.prune();
    expect(store.memory.facts()).toEqual([]);
    expect(store.count()).toBe(0);
    store.close();
  });
});

const pod = (uid: string, node: string, rs: string) => ({
  metadata: {
    uid,
    namespace: "shop",
    name: `web-${uid}`,
    ownerReferences: [{ kind: "ReplicaSet", name: rs, uid: `rs-${rs}`, controller: true }],
  },
  spec: { nodeName: node },
  status: { conditions: [{ type: "Ready", status: "False", lastTransitionTime: "2026-11-29T10:00:00Z" }] },
});

describe("graph snapshot codec (D425)", () => {
  const contents = {
    pods: [pod("p1", "node-a", "web-7b9d5c8f4")],
    replicaSets: [
      {
        metadata: {
          uid: "rs-web-7b9d5c8f4",
          namespace: "shop",
          name: "web-7b9d5c8f4",
          ownerReferences: [{ kind: "Deployment", name: "web", uid: "d1", controller: true }],
        },
      },
    ],
    nodes: [{ metadata: { name: "node-a", uid: "n1" }, status: { conditions: [{ type: "Ready", status: "True" }] } }],
    deletedPods: [["gone", 5] as [string, number]],
    deletedNodes: [],
  };

  test("round-trips what the graph reads: node, owner chain, Ready, tombstones", () => {
    const decoded = decodeGraph(encodeGraph({ ...contents, at: 42 }));
    if ("error" in decoded) throw new Error(decoded.error);
    expect(decoded.at).toBe(42);
    expect(decoded.pods[0]).toEqual(pod("p1", "node-a", "web-7b9d5c8f4") as never);
    expect(decoded.replicaSets[0]).toEqual(contents.replicaSets[0] as never);
    expect(decoded.nodes[0]).toEqual(contents.nodes[0] as never);
    expect(decoded.deletedPods).toEqual([["gone", 5]]);
  });

  test("a corrupt or foreign snapshot restores nothing and says why", () => {
    expect(decodeGraph("{")).toHaveProperty("error");
    expect(decodeGraph(JSON.stringify({ v: 99, at: 1 }))).toEqual({ error: "unknown snapshot version 99" });
    const wire = JSON.parse(encodeGraph({ ...contents, at: 1 }));
    wire.pods[0][3] = 7;
    expect(decodeGraph(JSON.stringify(wire))).toEqual({ error: "expected 9 strings" });
  });

  test("the graph restored from a snapshot answers storm ancestors before any watch lists; never clearance", () => {
    const logger = createLogger("error", () => undefined);
    const graph = new ClusterGraph({} as never, logger, () => undefined, { pods: true, replicaSets: true });
    expect(graph.restore(contents)).toBe(3);
    const signal = { kindOfObject: "Pod", uid: "p1", namespace: "shop", name: "web-p1" } as Signal;
    expect(graph.ancestors(signal).map((key) => `${key.kind}/${key.name}`)).toEqual([
      "Node/node-a",
      "ReplicaSet/web-7b9d5c8f4",
      "Deployment/web",
      "Namespace/shop",
    ]);
    expect(graph.clearance("p1", { kind_of_object: "Pod", name: "web-p1" } as never)).toBeUndefined();
    // The tombstone from 5 ms after the epoch is far past 2 h on the real clock: not restored.
    expect(graph.tombstones).toBe(0);
  });

  test("a pod the graph has not seen yet is keyed by the node its signal reports (D453); a known pod by its own", () => {
    const logger = createLogger("error", () => undefined);
    const graph = new ClusterGraph({} as never, logger, () => undefined, { pods: true, replicaSets: true });
    graph.restore(contents);
    const unseen = {
      kindOfObject: "Pod",
      uid: "not-yet",
      namespace: "shop",
      name: "web-new",
      node: "node-b",
    } as Signal;
    expect(graph.ancestors(unseen).map((key) => `${key.kind}/${key.name}`)).toEqual(["Node/node-b", "Namespace/shop"]);
    const known = { kindOfObject: "Pod", uid: "p1", namespace: "shop", name: "web-p1", node: "node-z" } as Signal;
    expect(graph.ancestors(known)[0]).toEqual({ kind: "Node", namespace: "", name: "node-a" });
  });

  test("an unseen pod's reported node that the watched nodes do not hold (the scheduler's instance) keys nothing", () => {
    const logger = createLogger("error", () => undefined);
    const graph = new ClusterGraph({} as never, logger, () => undefined, {
      nodes: true,
      pods: true,
      replicaSets: true,
    });
    graph.restore(contents);
    const pending = {
      kindOfObject: "Pod",
      uid: "not-yet",
      namespace: "shop",
      name: "web-new",
      reason: "FailedScheduling",
      node: "default-scheduler-control-plane",
    } as Signal;
    expect(graph.ancestors(pending).map((key) => `${key.kind}/${key.name}`)).toEqual(["Namespace/shop"]);
    const crashing = { ...pending, reason: "BackOff", node: "node-a" } as Signal;
    expect(graph.ancestors(crashing).map((key) => `${key.kind}/${key.name}`)).toEqual([
      "Node/node-a",
      "Namespace/shop",
    ]);
  });
});

describe("graph tombstones (D426)", () => {
  test("pruned 2 h after the deletion, on the graph's clock, and capped", () => {
    let clock = 1_000_000;
    const graph = new ClusterGraph(
      {} as never,
      createLogger("error", () => undefined),
      () => undefined,
      { pods: true, replicaSets: false },
      { now: () => clock },
    );
    const restored = graph.restore({
      pods: [],
      replicaSets: [],
      nodes: [],
      deletedPods: [["old", clock - 10 * MIN]],
      deletedNodes: [],
    });
    expect(restored).toBe(0);
    expect(graph.tombstones).toBe(1);
    expect(graph.clearance("old", { kind_of_object: "Pod", name: "x" } as never)).toMatchObject({
      resolution: "object_deleted",
    });
    clock += TOMBSTONE_TTL_MS - 10 * MIN;
    expect(graph.pruneTombstones()).toBe(1);
    expect(graph.tombstones).toBe(0);
    expect(graph.clearance("old", { kind_of_object: "Pod", name: "x" } as never)).toBeUndefined();
    expect(MAX_TOMBSTONES).toBeGreaterThanOrEqual(10_000);
  });
});
