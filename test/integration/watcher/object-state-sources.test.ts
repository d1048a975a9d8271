/**
 * The object-state source (D376) against the fake apiserver: its host runs the real spec (a short
 * tick and short windows from its settings; time is the wall clock) and each signal fires on the
 * scenario's transition at its threshold and not before, nothing fires for the first list, and the
 * countdown and the windows clear; then its RBAC probe through the real runner: granted (enabled,
 * its watches synced), denied under an explicit list (a refusal naming the grant) and under auto
 * (one `disabled (missing ...)` line, the watcher ready without it). And the graph's node
 * clearance (D377): Ready since its transition, a same-name replacement, a node gone.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import type { Signal } from "../../../src/watcher/core/signal.ts";
import type { KubeObject, SourceSpec } from "../../../src/watcher/core/source-spec.ts";
import {
  OBJECT_STATE_DEFAULTS,
  OBJECT_STATE_SPEC,
  ObjectStateDetector,
  type ObjectStateSettings,
} from "../../../src/watcher/core/sources/object-state.ts";
import { ClusterGraph } from "../../../src/watcher/sources/cluster-graph.ts";
import { DetectorSource } from "../../../src/watcher/sources/detector-source.ts";
import { StartupRefusal, startWatcher } from "../../../src/watcher/watch-runner.ts";
import { tempDir, waitFor } from "../../support/daemon.ts";
import { writeKubeconfig } from "../../support/kube.ts";

const ESCALATE_MS = 300;

let api: FakeApiserver;
let source: DetectorSource<ObjectStateSettings>;
const emitted: Signal[] = [];
/** Every object the detector was told about, as `watch/name@resourceVersion` (a barrier for "not before"). */
const observed = new Set<string>();

function seen(watch: string, object: KubeObject): string {
  const metadata = object.metadata as { name?: string; resourceVersion?: string };
  return `${watch}/${metadata.name}@${metadata.resourceVersion}`;
}

/** The real detector, every observation noted; a 50 ms tick instead of 30 s. */
const spec: SourceSpec<ObjectStateSettings> = {
  ...OBJECT_STATE_SPEC,
  tickMs: 50,
  detector: (settings) => {
    const detector = new ObjectStateDetector(settings);
    return {
      observe: (watch, change, object, now, initial) => {
        const signals = detector.observe(watch, change, object, now, initial);
        observed.add(seen(watch, object));
        return signals;
      },
      tick: (now) => detector.tick(now),
    };
  },
};

beforeAll(async () => {
  api = await startFakeApiserver({});
  api.scenario.createNode({ name: "os-n1" });
  for (const name of ["os-p1", "os-p2", "os-p3"])
    api.scenario.createPod({ namespace: "shop", name, node: "os-n1", containers: [{ name: "app" }] });
  source = new DetectorSource({
    spec,
    settings: { ...OBJECT_STATE_DEFAULTS, pressureEscalateMs: ESCALATE_MS },
    connection: { server: api.url, tls: {}, token: () => undefined },
    emit: (signal) => emitted.push(signal),
    logger: createLogger("error"),
    onRestart: () => {},
  });
  await source.start();
});
afterAll(async () => {
  await source.stop();
  await api.stop();
});

const reasons = (name: string) =>
  emitted.filter((one) => one.name === name).map((one) => `${one.reason}/${one.severity}`);

async function signalOf(reason: string, name: string, nth = 1): Promise<Signal> {
  return waitFor(
    () => emitted.filter((one) => one.reason === reason && one.name === name)[nth - 1],
    8000,
    `${reason} #${nth} on ${name}`,
  );
}

/** Waits until the detector saw this version of the object. */
async function observedNow(watch: string, object: KubeObject): Promise<void> {
  await waitFor(() => (observed.has(seen(watch, object)) ? true : undefined), 8000, `${seen(watch, object)} observed`);
}

describe("signals on the fake apiserver", () => {
  test("the first list emits nothing; a node going NotReady: node_notready; its third Ready change: node_flapping", async () => {
    expect(source.synced).toBe(true);
    expect(emitted).toEqual([]);
    const down = api.scenario.updateNode({ name: "os-n1", ready: "False" });
    const notReady = await signalOf("node_notready", "os-n1");
    expect(notReady).toMatchObject({ kind: "objectstate.node_notready", severity: "critical", kindOfObject: "Node" });
    expect(notReady.uid).toBe(String((down.metadata as { uid: string }).uid));
    expect(notReady.message).toStartWith("node Ready condition went True→False");
    const up = api.scenario.updateNode({ name: "os-n1", ready: "True" });
    await observedNow("nodes", up);
    expect(reasons("os-n1")).toEqual(["node_notready/critical"]);
    api.scenario.updateNode({ name: "os-n1", ready: "False" });
    await signalOf("node_flapping", "os-n1");
    await signalOf("node_notready", "os-n1", 2);
  });

  test("node_pressure: warning on False→True, critical once sustained; eviction_burst on the third evicted pod", async () => {
    api.scenario.updateNode({ name: "os-n1", ready: "True", pressure: ["MemoryPressure"] });
    const warning = await signalOf("node_pressure", "os-n1");
    expect(warning.severity).toBe("warning");
    const critical = await signalOf("node_pressure", "os-n1", 2);
    expect(critical.severity).toBe("critical");
    expect(critical.firstSeen - warning.firstSeen).toBeGreaterThanOrEqual(ESCALATE_MS);
    const evict = (name: string) =>
      api.scenario.patch(
        { apiVersion: "v1", kind: "Pod", namespace: "shop", name },
        { status: { phase: "Failed", reason: "Evicted", message: "The node was low on resource: memory." } },
      );
    await observedNow("pods", evict("os-p1"));
    await observedNow("pods", evict("os-p2"));
    expect(reasons("os-n1")).not.toContain("eviction_burst/warning");
    evict("os-p3");
    const burst = await signalOf("eviction_burst", "os-n1");
    expect(burst).toMatchObject({ kind: "objectstate.eviction_burst", kindOfObject: "Node", severity: "warning" });
  });

  test("restart_burst: restarts up by 2 nothing, by 3 within the window fires on the pod", async () => {
    const container = (restartCount: number) => [{ name: "app", restartCount }];
    api.scenario.createPod({ namespace: "shop", name: "os-crash", node: "os-n1", containers: container(1) });
    await observedNow(
      "pods",
      api.scenario.updatePod({ namespace: "shop", name: "os-crash", node: "os-n1", containers: container(3) }),
    );
    expect(reasons("os-crash")).toEqual([]);
    api.scenario.updatePod({ namespace: "shop", name: "os-crash", node: "os-n1", containers: container(4) });
    const burst = await signalOf("restart_burst", "os-crash");
    expect(burst).toMatchObject({
      kind: "objectstate.restart_burst",
      kindOfObject: "Pod",
      namespace: "shop",
      node: "os-n1",
    });
  });

  test("progress_deadline: fires after 0.8 × progressDeadlineSeconds without progress, not before; ready replicas clear it, and it can fire again", async () => {
    const stuck = (ready: number, generation: number) =>
      api.scenario.apply({
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "os-web", namespace: "shop", generation },
        spec: { replicas: 3, progressDeadlineSeconds: 1, selector: { matchLabels: { app: "os-web" } } },
        status: { observedGeneration: generation, replicas: 3, updatedReplicas: 3, readyReplicas: ready },
      });
    const created = Date.now();
    stuck(1, 1);
    const fired = await signalOf("progress_deadline", "os-web");
    expect(fired).toMatchObject({
      kind: "objectstate.progress_deadline",
      kindOfObject: "Deployment",
      severity: "warning",
    });
    expect(fired.firstSeen - created).toBeGreaterThan(800);
    await observedNow("deployments", stuck(3, 1));
    stuck(1, 2);
    await signalOf("progress_deadline", "os-web", 2);
  });

  test("endpoints_empty: a Service's ready endpoints summed over its slices reaching 0 fires with the Service UID; pdb_gridlocked on 1 → 0", async () => {
    api.scenario.applyEndpointSlice({
      namespace: "shop",
      service: "os-svc",
      name: "os-svc-a",
      ready: [true, true],
      serviceUid: "svc-uid-1",
    });
    await observedNow(
      "endpointslices",
      api.scenario.applyEndpointSlice({
        namespace: "shop",
        service: "os-svc",
        name: "os-svc-b",
        ready: [true],
        serviceUid: "svc-uid-1",
      }),
    );
    await observedNow(
      "endpointslices",
      api.scenario.applyEndpointSlice({
        namespace: "shop",
        service: "os-svc",
        name: "os-svc-a",
        ready: [false, false],
        serviceUid: "svc-uid-1",
      }),
    );
    expect(reasons("os-svc")).toEqual([]);
    api.scenario.applyEndpointSlice({
      namespace: "shop",
      service: "os-svc",
      name: "os-svc-b",
      ready: [false],
      serviceUid: "svc-uid-1",
    });
    const empty = await signalOf("endpoints_empty", "os-svc");
    expect(empty).toMatchObject({
      kind: "objectstate.endpoints_empty",
      kindOfObject: "Service",
      uid: "svc-uid-1",
      severity: "critical",
    });
    await observedNow(
      "poddisruptionbudgets",
      api.scenario.applyPodDisruptionBudget({
        namespace: "shop",
        name: "os-pdb",
        disruptionsAllowed: 1,
        currentHealthy: 3,
      }),
    );
    expect(reasons("os-pdb")).toEqual([]);
    api.scenario.applyPodDisruptionBudget({
      namespace: "shop",
      name: "os-pdb",
      disruptionsAllowed: 0,
      currentHealthy: 2,
      expectedPods: 3,
    });
    const gridlocked = await signalOf("pdb_gridlocked", "os-pdb");
    expect(gridlocked).toMatchObject({
      kind: "objectstate.pdb_gridlocked",
      kindOfObject: "PodDisruptionBudget",
      severity: "warning",
    });
  });
});

describe("the RBAC probe", () => {
  const ALL = ["get", "list", "watch", "create"];
  const withoutSlices = [
    {
      verbs: ALL,
      resources: [
        "events",
        "pods",
        "nodes",
        "deployments",
        "poddisruptionbudgets",
        "replicasets",
        "selfsubjectaccessreviews",
      ],
    },
  ];

  async function start(sources: string, log: string[]) {
    const kubeconfig = writeKubeconfig(join(tempDir(), "kubeconfig"), { server: api.url });
    const config = watcherConfigFromArgv([
      "--dry-run",
      `--kubeconfig=${kubeconfig}`,
      "--cluster-name=kind-test",
      `--sources=${sources}`,
      "--storm=off",
      "--recovery-stable-for=0",
    ]);
    if (!config.ok) throw new Error(config.error);
    return startWatcher(
      config.value,
      createLogger("info", (line) => log.push(line)),
      { stdout: () => {} },
    );
  }

  test("granted: enabled, and the watcher is ready once its five watches listed", async () => {
    const log: string[] = [];
    const running = await start("cluster-events,object-state", log);
    try {
      expect(log.filter((line) => line.includes("source object-state:"))).toEqual([
        expect.stringContaining("source object-state: enabled"),
      ]);
      await waitFor(() => (running.ready() ? true : undefined), 8000, "ready");
      const paths = api.requests().map((request) => request.path);
      for (const path of ["/apis/discovery.k8s.io/v1/endpointslices", "/apis/policy/v1/poddisruptionbudgets"])
        expect(paths).toContain(path);
    } finally {
      await running.stop();
    }
  });

  test("denied under an explicit list: startup refused naming the grant", async () => {
    api.scenario.setGrants(withoutSlices);
    try {
      const started = start("cluster-events,object-state", []);
      await expect(started).rejects.toThrow(StartupRefusal);
      await expect(started).rejects.toThrow(
        'source "object-state" requires permission to "list endpointslices.discovery.k8s.io cluster-wide"',
      );
    } finally {
      api.scenario.setGrants(undefined);
    }
  });

  test("denied under auto: one disabled line naming the grant; the watcher starts and is ready without it", async () => {
    api.scenario.setGrants(withoutSlices);
    const log: string[] = [];
    const running = await start("auto", log);
    try {
      expect(log.filter((line) => line.includes("source object-state:"))).toEqual([
        expect.stringContaining(
          'source object-state: disabled (missing "list endpointslices.discovery.k8s.io cluster-wide" — grant it, or name it in --sources to make this fatal)',
        ),
      ]);
      await waitFor(() => (running.ready() ? true : undefined), 8000, "ready");
    } finally {
      await running.stop();
      api.scenario.setGrants(undefined);
    }
  });
});

test("node clearance (D377): Ready since its transition clears; NotReady does not; a Ready replacement recovers; gone with none is object_deleted", async () => {
  const graph = new ClusterGraph(
    { server: api.url, tls: {}, token: () => undefined },
    createLogger("error"),
    () => {},
    {
      pods: false,
      replicaSets: false,
      nodes: true,
    },
  );
  const blind = new ClusterGraph(
    { server: api.url, tls: {}, token: () => undefined },
    createLogger("error"),
    () => {},
    {
      pods: false,
      replicaSets: false,
    },
  );
  const incident = (name: string) => ({
    namespace: "",
    kind_of_object: "Node",
    name,
    fingerprint: "sha256:x",
    cluster: "c",
  });
  const uidOf = (object: KubeObject) => String((object.metadata as { uid: string }).uid);
  const down = api.scenario.createNode({ name: "clear-n1", ready: "False" });
  await graph.start();
  try {
    expect(graph.clearance(uidOf(down), incident("clear-n1"))).toEqual({ cleared: false });
    expect(blind.clearance(uidOf(down), incident("clear-n1"))).toBeUndefined();
    const up = api.scenario.updateNode({ name: "clear-n1", ready: "True" });
    const since = Date.parse(
      String(
        (up.status as { conditions: Array<{ type: string; lastTransitionTime: string }> }).conditions.find(
          (one) => one.type === "Ready",
        )?.lastTransitionTime,
      ),
    );
    await waitFor(
      () => (graph.clearance(uidOf(down), incident("clear-n1"))?.cleared ? true : undefined),
      8000,
      "cleared",
    );
    expect(graph.clearance(uidOf(down), incident("clear-n1"))).toEqual({
      cleared: true,
      stableSince: since,
      resolution: "recovered",
    });
    api.scenario.delete({ apiVersion: "v1", kind: "Node", name: "clear-n1" });
    const gone = await waitFor(
      () => {
        const observed = graph.clearance(uidOf(down), incident("clear-n1"));
        return observed?.resolution === "object_deleted" ? observed : undefined;
      },
      8000,
      "object_deleted",
    );
    expect(gone.cleared).toBe(true);
    const replacement = api.scenario.createNode({ name: "clear-n1", ready: "True" });
    expect(uidOf(replacement)).not.toBe(uidOf(down));
    const recovered = await waitFor(
      () => {
        const observed = graph.clearance(uidOf(down), incident("clear-n1"));
        return observed?.resolution === "recovered" ? observed : undefined;
      },
      8000,
      "the replacement",
    );
    expect(recovered.cleared).toBe(true);
    // A node never seen is not judged here.
    expect(graph.clearance("nope", incident("never-there"))).toBeUndefined();
  } finally {
    await graph.stop();
  }
});
