/**
 * The object-state detector (D376), in process with a hand-driven clock: each signal fires at its
 * threshold and not before, the first list and creations emit nothing (progress_deadline, a
 * countdown, may), each condition clears and can fire again, deletes forget, and per-object
 * state expires after a day untouched.
 */
import { describe, expect, test } from "bun:test";
import type { Signal } from "../../../src/watcher/core/signal.ts";
import type { KubeObject } from "../../../src/watcher/core/source-spec.ts";
import {
  OBJECT_STATE_DEFAULTS,
  OBJECT_STATE_SPEC,
  ObjectStateDetector,
} from "../../../src/watcher/core/sources/object-state.ts";

const MINUTE = 60_000;
const T0 = Date.parse("2026-11-28T10:00:00Z");

function node(name: string, ready: string, pressure: string[] = [], uid = `uid-${name}`): KubeObject {
  return {
    metadata: { name, uid },
    status: {
      conditions: [
        ...["MemoryPressure", "DiskPressure", "PIDPressure"].map((type) => ({
          type,
          status: pressure.includes(type) ? "True" : "False",
        })),
        {
          type: "Ready",
          status: ready,
          reason: ready === "True" ? "KubeletReady" : "NodeStatusUnknown",
          message: "Kubelet stopped posting node status.",
        },
      ],
    },
  };
}

function pod(name: string, restarts: number, extra: { evicted?: boolean; node?: string } = {}): KubeObject {
  return {
    metadata: {
      name,
      namespace: "shop",
      uid: `uid-${name}`,
      ownerReferences: [{ kind: "ReplicaSet", name: "web-7d", uid: "rs", controller: true }],
    },
    spec: { nodeName: extra.node ?? "n1" },
    status: {
      ...(extra.evicted ? { phase: "Failed", reason: "Evicted" } : { phase: "Running" }),
      containerStatuses: [{ name: "app", restartCount: restarts }],
    },
  };
}

function deployment(
  ready: number,
  lastUpdate?: number,
  extra: { replicas?: number; generation?: number } = {},
): KubeObject {
  return {
    metadata: { name: "web", namespace: "shop", uid: "uid-web", generation: extra.generation ?? 1 },
    spec: { replicas: extra.replicas ?? 3, progressDeadlineSeconds: 600 },
    status: {
      updatedReplicas: 3,
      readyReplicas: ready,
      availableReplicas: ready,
      conditions: [
        {
          type: "Progressing",
          status: "True",
          reason: "ReplicaSetUpdated",
          ...(lastUpdate ? { lastUpdateTime: new Date(lastUpdate).toISOString() } : {}),
        },
      ],
    },
  };
}

function slice(name: string, ready: boolean[], owner = true): KubeObject {
  return {
    metadata: {
      name,
      namespace: "shop",
      uid: `uid-${name}`,
      labels: { "kubernetes.io/service-name": "web" },
      ...(owner ? { ownerReferences: [{ kind: "Service", name: "web", uid: "uid-svc-web" }] } : {}),
    },
    endpoints: ready.map((one) => ({ addresses: ["10.0.0.1"], conditions: { ready: one } })),
  };
}

function pdb(allowed: number, healthy: number): KubeObject {
  return {
    metadata: { name: "web-pdb", namespace: "shop", uid: "uid-pdb" },
    status: { disruptionsAllowed: allowed, currentHealthy: healthy, expectedPods: healthy },
  };
}

const brief = (signals: Signal[]) => signals.map((one) => `${one.kind}/${one.severity}`);

describe("nodes", () => {
  test("node_notready: the first list and a creation emit nothing; True→False fires critical once with the reason; delete forgets", () => {
    const detector = new ObjectStateDetector();
    expect(detector.observe("nodes", "add", node("n1", "True"), T0, true)).toEqual([]);
    expect(detector.observe("nodes", "add", node("n2", "False"), T0, false)).toEqual([]);
    expect(detector.observe("nodes", "update", node("n1", "True"), T0 + 1000, false)).toEqual([]);
    const [fired, ...rest] = detector.observe("nodes", "update", node("n1", "False"), T0 + 2000, false);
    expect(rest).toEqual([]);
    expect(fired).toMatchObject({
      kind: "objectstate.node_notready",
      reason: "node_notready",
      kindOfObject: "Node",
      namespace: "",
      name: "n1",
      uid: "uid-n1",
      severity: "critical",
      type: "",
      eventCount: 1,
      firstSeen: T0 + 2000,
      node: "n1",
    });
    expect(fired?.message).toStartWith("node Ready condition went True→False: NodeStatusUnknown: Kubelet stopped");
    expect(detector.observe("nodes", "update", node("n1", "False"), T0 + 3000, false)).toEqual([]);
    // False→Unknown is not a new failure; Unknown from True is.
    expect(detector.observe("nodes", "update", node("n1", "Unknown"), T0 + 4000, false)).toEqual([]);
    detector.observe("nodes", "update", node("n2", "True"), T0 + 5000, false);
    expect(detector.observe("nodes", "update", node("n2", "Unknown"), T0 + 6000, false)[0]?.message).toStartWith(
      "node Ready condition went True→Unknown",
    );
    expect(detector.observe("nodes", "delete", node("n1", "False"), T0 + 7000, false)).toEqual([]);
    expect(detector.nodes.size).toBe(1);
    // A re-created node starts from scratch: its creation emits nothing.
    expect(detector.observe("nodes", "add", node("n1", "False", [], "uid-n1b"), T0 + 8000, false)).toEqual([]);
  });

  test("node_flapping: the third Ready change within 10m fires, not the second; it clears once the window empties and fires again", () => {
    const detector = new ObjectStateDetector();
    detector.observe("nodes", "add", node("n1", "False"), T0, true);
    expect(brief(detector.observe("nodes", "update", node("n1", "True"), T0 + MINUTE, false))).toEqual([]);
    expect(brief(detector.observe("nodes", "update", node("n1", "False"), T0 + 2 * MINUTE, false))).toEqual([
      "objectstate.node_notready/critical",
    ]);
    expect(brief(detector.observe("nodes", "update", node("n1", "True"), T0 + 3 * MINUTE, false))).toEqual([
      "objectstate.node_flapping/warning",
    ]);
    expect(
      detector.observe("nodes", "update", node("n1", "False"), T0 + 4 * MINUTE, false).map((one) => one.reason),
    ).toEqual(["node_notready"]);
    // Changes spread wider than the window never flap.
    const slow = new ObjectStateDetector();
    slow.observe("nodes", "add", node("n1", "True"), T0, true);
    for (let step = 1; step <= 6; step++)
      expect(
        slow
          .observe("nodes", "update", node("n1", step % 2 ? "False" : "True"), T0 + step * 6 * MINUTE, false)
          .map((one) => one.reason),
      ).not.toContain("node_flapping");
    // Cleared by a quiet window, then the next three changes flap again.
    expect(detector.tick(T0 + 15 * MINUTE)).toEqual([]);
    detector.observe("nodes", "update", node("n1", "True"), T0 + 20 * MINUTE, false);
    detector.observe("nodes", "update", node("n1", "False"), T0 + 21 * MINUTE, false);
    expect(
      detector.observe("nodes", "update", node("n1", "True"), T0 + 22 * MINUTE, false).map((one) => one.reason),
    ).toEqual(["node_flapping"]);
  });

  test("node_pressure: False→True fires warning; sustained 5m escalates to critical once; cleared, it fires again", () => {
    const detector = new ObjectStateDetector();
    detector.observe("nodes", "add", node("n1", "True"), T0, true);
    const [warning] = detector.observe("nodes", "update", node("n1", "True", ["MemoryPressure"]), T0 + 1000, false);
    expect(warning).toMatchObject({ kind: "objectstate.node_pressure", severity: "warning", uid: "uid-n1" });
    expect(warning?.message).toBe("node MemoryPressure went False→True");
    expect(detector.observe("nodes", "update", node("n1", "True", ["MemoryPressure"]), T0 + 2000, false)).toEqual([]);
    expect(detector.tick(T0 + 1000 + 5 * MINUTE - 1)).toEqual([]);
    const [critical] = detector.tick(T0 + 1000 + 5 * MINUTE);
    expect(critical).toMatchObject({ kind: "objectstate.node_pressure", severity: "critical", uid: "uid-n1" });
    expect(critical?.message).toBe("node MemoryPressure sustained for 5m0s");
    expect(detector.tick(T0 + 20 * MINUTE)).toEqual([]);
    expect(detector.observe("nodes", "update", node("n1", "True"), T0 + 21 * MINUTE, false)).toEqual([]);
    expect(
      brief(
        detector.observe(
          "nodes",
          "update",
          node("n1", "True", ["DiskPressure", "PIDPressure"]),
          T0 + 22 * MINUTE,
          false,
        ),
      ),
    ).toEqual(["objectstate.node_pressure/warning", "objectstate.node_pressure/warning"]);
    // Pressure already there when listed is state, not a transition.
    const listed = new ObjectStateDetector();
    expect(listed.observe("nodes", "add", node("n1", "True", ["MemoryPressure"]), T0, true)).toEqual([]);
  });

  test("eviction_burst: the third eviction on a node within 10m fires (Node), escalating its pressure; a quiet window clears it", () => {
    const detector = new ObjectStateDetector();
    detector.observe("nodes", "add", node("n1", "True"), T0, true);
    detector.observe("nodes", "update", node("n1", "True", ["MemoryPressure"]), T0, false);
    for (const name of ["a", "b", "c", "d"]) detector.observe("pods", "add", pod(name, 0), T0, true);
    expect(detector.observe("pods", "update", pod("a", 0, { evicted: true }), T0 + MINUTE, false)).toEqual([]);
    // The same pod seen evicted again is not a new eviction.
    expect(detector.observe("pods", "update", pod("a", 0, { evicted: true }), T0 + MINUTE, false)).toEqual([]);
    expect(detector.observe("pods", "update", pod("b", 0, { evicted: true }), T0 + 2 * MINUTE, false)).toEqual([]);
    const fired = detector.observe("pods", "update", pod("c", 0, { evicted: true }), T0 + 3 * MINUTE, false);
    expect(fired.map((one) => [one.kind, one.severity, one.kindOfObject, one.uid])).toEqual([
      ["objectstate.eviction_burst", "warning", "Node", "uid-n1"],
      ["objectstate.node_pressure", "critical", "Node", "uid-n1"],
    ]);
    expect(fired[1]?.message).toBe("node MemoryPressure with an eviction burst");
    expect(detector.tick(T0 + 20 * MINUTE)).toEqual([]);
    // Cleared: three more evictions fire again (the pressure already escalated stays so).
    const later = detector.observe("pods", "update", pod("d", 0, { evicted: true }), T0 + 21 * MINUTE, false);
    for (const name of ["e", "f"]) {
      later.push(...detector.observe("pods", "add", pod(name, 0), T0 + 21 * MINUTE, false));
      later.push(...detector.observe("pods", "update", pod(name, 0, { evicted: true }), T0 + 22 * MINUTE, false));
    }
    expect(brief(later)).toEqual(["objectstate.eviction_burst/warning"]);
    const again = new ObjectStateDetector();
    again.observe("nodes", "add", node("n1", "True"), T0, true);
    expect(again.observe("pods", "add", pod("z", 0, { evicted: true }), T0, false)).toEqual([]);
  });
});

describe("workloads", () => {
  test("restart_burst: restarts growing by 3 within 10m fire (Pod, CrashLoopBackOff family), by 2 not; growth over a longer span never; it clears and fires again", () => {
    const detector = new ObjectStateDetector();
    expect(detector.observe("pods", "add", pod("web-1", 5), T0, true)).toEqual([]);
    expect(detector.observe("pods", "update", pod("web-1", 7), T0 + MINUTE, false)).toEqual([]);
    const [fired] = detector.observe("pods", "update", pod("web-1", 8), T0 + 2 * MINUTE, false);
    expect(fired).toMatchObject({
      kind: "objectstate.restart_burst",
      reason: "restart_burst",
      kindOfObject: "Pod",
      namespace: "shop",
      uid: "uid-web-1",
      severity: "warning",
      node: "n1",
      controllerRef: "ReplicaSet/web-7d",
    });
    expect(detector.observe("pods", "update", pod("web-1", 12), T0 + 3 * MINUTE, false)).toEqual([]);
    detector.tick(T0 + 30 * MINUTE);
    expect(detector.observe("pods", "update", pod("web-1", 13), T0 + 31 * MINUTE, false)).toEqual([]);
    expect(
      detector.observe("pods", "update", pod("web-1", 15), T0 + 32 * MINUTE, false).map((one) => one.reason),
    ).toEqual(["restart_burst"]);
    const slow = new ObjectStateDetector();
    slow.observe("pods", "add", pod("web-2", 0), T0, false);
    for (let step = 1; step <= 6; step++)
      expect(slow.observe("pods", "update", pod("web-2", step), T0 + step * 6 * MINUTE, false)).toEqual([]);
  });

  test("progress_deadline: level-triggered from the recorded last progress; not at 0.8 × the deadline, just after; ready replicas clear it", () => {
    const deadline = 0.8 * 600_000;
    const stuck = new ObjectStateDetector();
    // Listed already stuck for longer than the countdown: it reports once armed (the one initial signal).
    const listed = stuck.observe("deployments", "add", deployment(1, T0 - deadline - 1000), T0, true);
    expect(listed.map((one) => [one.kind, one.severity, one.kindOfObject, one.uid])).toEqual([
      ["objectstate.progress_deadline", "warning", "Deployment", "uid-web"],
    ]);
    expect(stuck.tick(T0 + MINUTE)).toEqual([]);
    const detector = new ObjectStateDetector();
    expect(detector.observe("deployments", "add", deployment(1, T0), T0, true)).toEqual([]);
    expect(detector.tick(T0 + deadline)).toEqual([]);
    expect(brief(detector.tick(T0 + deadline + 1))).toEqual(["objectstate.progress_deadline/warning"]);
    expect(detector.observe("deployments", "update", deployment(3, T0), T0 + deadline + 2, false)).toEqual([]);
    // Progress restarts the countdown; unready again and stuck, it fires again.
    detector.observe("deployments", "update", deployment(2, T0, { generation: 2 }), T0 + 20 * MINUTE, false);
    expect(detector.tick(T0 + 20 * MINUTE + deadline)).toEqual([]);
    expect(brief(detector.tick(T0 + 20 * MINUTE + deadline + 1))).toEqual(["objectstate.progress_deadline/warning"]);
    const ready = new ObjectStateDetector();
    ready.observe("deployments", "add", deployment(3, T0 - 60 * MINUTE), T0, true);
    expect(ready.tick(T0 + 60 * MINUTE)).toEqual([]);
  });
});

describe("services and budgets", () => {
  test("endpoints_empty: the ready endpoints summed over a Service's slices going to 0 fires critical with the Service UID; recovering clears it", () => {
    const detector = new ObjectStateDetector();
    expect(detector.observe("endpointslices", "add", slice("web-a", [true, true]), T0, true)).toEqual([]);
    expect(detector.observe("endpointslices", "add", slice("web-b", [true]), T0, true)).toEqual([]);
    expect(detector.observe("endpointslices", "update", slice("web-a", [false, false]), T0 + 1000, false)).toEqual([]);
    const [fired] = detector.observe("endpointslices", "update", slice("web-b", [false]), T0 + 2000, false);
    expect(fired).toMatchObject({
      kind: "objectstate.endpoints_empty",
      kindOfObject: "Service",
      namespace: "shop",
      name: "web",
      uid: "uid-svc-web",
      severity: "critical",
    });
    expect(detector.observe("endpointslices", "update", slice("web-b", [false, false]), T0 + 3000, false)).toEqual([]);
    detector.observe("endpointslices", "update", slice("web-b", [true]), T0 + 4000, false);
    expect(brief(detector.observe("endpointslices", "update", slice("web-b", [false]), T0 + 5000, false))).toEqual([
      "objectstate.endpoints_empty/critical",
    ]);
    // No owner reference: the synthetic id. The last slice deleted is a Service gone, not empty.
    const bare = new ObjectStateDetector();
    bare.observe("endpointslices", "add", slice("web-a", [true], false), T0, true);
    expect(bare.observe("endpointslices", "update", slice("web-a", [false], false), T0 + 1000, false)[0]?.uid).toBe(
      "service:shop/web",
    );
    const gone = new ObjectStateDetector();
    gone.observe("endpointslices", "add", slice("web-a", [true]), T0, true);
    expect(gone.observe("endpointslices", "delete", slice("web-a", [true]), T0 + 1000, false)).toEqual([]);
    expect(gone.services.size).toBe(0);
  });

  test("pdb_gridlocked: disruptionsAllowed above 0 → 0 while pods exist fires; with no pods, or already 0 when listed, it does not", () => {
    const detector = new ObjectStateDetector();
    detector.observe("poddisruptionbudgets", "add", pdb(1, 3), T0, true);
    const [fired] = detector.observe("poddisruptionbudgets", "update", pdb(0, 2), T0 + 1000, false);
    expect(fired).toMatchObject({
      kind: "objectstate.pdb_gridlocked",
      kindOfObject: "PodDisruptionBudget",
      uid: "uid-pdb",
      severity: "warning",
    });
    expect(detector.observe("poddisruptionbudgets", "update", pdb(0, 2), T0 + 2000, false)).toEqual([]);
    detector.observe("poddisruptionbudgets", "update", pdb(1, 3), T0 + 3000, false);
    expect(detector.observe("poddisruptionbudgets", "update", pdb(0, 0), T0 + 4000, false)).toEqual([]);
    const listed = new ObjectStateDetector();
    expect(listed.observe("poddisruptionbudgets", "add", pdb(0, 3), T0, true)).toEqual([]);
    expect(listed.observe("poddisruptionbudgets", "update", pdb(0, 3), T0 + 1000, false)).toEqual([]);
  });
});

test("per-object state untouched for 24h is forgotten by the sweep; the spec asks list and watch on its five resources and sweeps every 30s", () => {
  const detector = new ObjectStateDetector();
  detector.observe("nodes", "add", node("n1", "True"), T0, true);
  detector.observe("pods", "add", pod("p", 0), T0, true);
  detector.observe("deployments", "add", deployment(3, T0), T0, true);
  detector.observe("endpointslices", "add", slice("web-a", [true]), T0, true);
  detector.observe("poddisruptionbudgets", "add", pdb(1, 1), T0, true);
  detector.tick(T0 + OBJECT_STATE_DEFAULTS.stateTtlMs);
  const sizes = () =>
    [detector.nodes, detector.pods, detector.deployments, detector.services, detector.budgets].map((one) => one.size);
  expect(sizes()).toEqual([1, 1, 1, 1, 1]);
  detector.tick(T0 + OBJECT_STATE_DEFAULTS.stateTtlMs + 1);
  expect(sizes()).toEqual([0, 0, 0, 0, 0]);
  expect(OBJECT_STATE_SPEC.tickMs).toBe(30_000);
  expect(
    OBJECT_STATE_SPEC.required.map((check) => `${check.verb} ${check.resource}${check.group ? `.${check.group}` : ""}`),
  ).toEqual([
    "list pods",
    "watch pods",
    "list nodes",
    "watch nodes",
    "list deployments.apps",
    "watch deployments.apps",
    "list endpointslices.discovery.k8s.io",
    "watch endpointslices.discovery.k8s.io",
    "list poddisruptionbudgets.policy",
    "watch poddisruptionbudgets.policy",
  ]);
});
