/**
 * A pod bundle walks the owner chain to the top workload (D440-D442), against the fake
 * kube-apiserver: a Deployment's crash-looping pod names `workload=Deployment/<ns>/<name>` and has
 * the Deployment's pods in `radius` (the overflow command lists them by its selector); a Job pod
 * under a CronJob names the CronJob (never read) and its radius is the CronJob's pods by owner; a
 * bare pod, or one owned by no workload kind, names itself with no radius; a ReplicaSet whose
 * Deployment cannot be read still gives a bundle naming the Deployment, with the error trailer and
 * the ReplicaSet's pods; `--enrich-lists` without replicasets stops the walk at the ReplicaSet;
 * with storms' topology graph synced, the ReplicaSet is taken from it instead of a GET.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import type { Signal } from "../../../src/watcher/core/signal.ts";
import type { EnricherSettings } from "../../../src/watcher/enrich-run.ts";
import { podEnricher } from "../../../src/watcher/enricher.ts";
import { reviewAccess } from "../../../src/watcher/kube/access-review.ts";
import type { KubeConnection } from "../../../src/watcher/kube/kube-connection.ts";
import { ClusterGraph } from "../../../src/watcher/sources/cluster-graph.ts";
import { enrichSignal } from "../../support/enrich-signal.ts";

let api: FakeApiserver;
let connection: KubeConnection;
const settings = { capBytes: 8192, logLines: 20, timeoutMs: 5000 };

type KubeObject = Record<string, unknown>;
const uidOf = (object: KubeObject) => String((object.metadata as { uid: string }).uid);
const head = (bundle: string) => bundle.split("\n")[0] ?? "";
const lines = (bundle: string, prefix: string) => bundle.split("\n").filter((line) => line.startsWith(prefix));
const gets = () => api.requests().map((request) => request.path);

function signalOf(pod: KubeObject): Signal {
  const metadata = pod.metadata as { namespace: string; name: string; uid: string };
  return enrichSignal("Pod", metadata.namespace, metadata.name, metadata.uid);
}

function enrich(pod: KubeObject, overrides: Partial<EnricherSettings> = {}): Promise<string> {
  return podEnricher(connection, { ...settings, ...overrides })(signalOf(pod)).then(String);
}

const pods: Record<string, KubeObject> = {};

function job(name: string, owner: KubeObject | undefined, labels: Record<string, string>): KubeObject {
  const reference = owner && {
    apiVersion: "batch/v1",
    kind: "CronJob",
    name: String((owner.metadata as { name: string }).name),
    uid: uidOf(owner),
    controller: true,
  };
  return api.scenario.apply({
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name, namespace: "shop", ...(reference ? { ownerReferences: [reference] } : {}) },
    spec: { selector: { matchLabels: labels }, template: { metadata: { labels } } },
    status: { failed: 1 },
  });
}

beforeAll(async () => {
  api = await startFakeApiserver({ tokens: { t: "watcher" } });
  connection = { server: api.url, tls: {}, token: () => "t" };
  // A Deployment, its ReplicaSet, two of its pods (one crash-looping) and an unrelated pod.
  const deployment = api.scenario.createDeployment({ namespace: "shop", name: "web", replicas: 2, readyReplicas: 1 });
  const replicaSet = api.scenario.createReplicaSet({
    namespace: "shop",
    name: "web-7c9",
    replicas: 2,
    labels: { app: "web" },
    owner: { kind: "Deployment", name: "web", uid: uidOf(deployment) },
  });
  const rsOwner = { kind: "ReplicaSet", name: "web-7c9", uid: uidOf(replicaSet) };
  pods.crashing = api.scenario.createPod({
    namespace: "shop",
    name: "web-7c9-a",
    node: "node-1",
    labels: { app: "web" },
    owner: rsOwner,
    containers: [{ name: "app", waitingReason: "CrashLoopBackOff", restartCount: 4 }],
  });
  api.scenario.createPod({
    namespace: "shop",
    name: "web-7c9-b",
    node: "node-2",
    labels: { app: "web" },
    owner: rsOwner,
  });
  api.scenario.createPod({ namespace: "shop", name: "cart-1", node: "node-2", labels: { app: "cart" } });
  api.scenario.setPodLogs("shop", "web-7c9-a", "app", { current: "", previous: "panic: db unreachable\n" });
  // A CronJob with two Jobs of its own (one pod each) and a Job of nobody's.
  const cronJob = api.scenario.apply({
    apiVersion: "batch/v1",
    kind: "CronJob",
    metadata: { name: "nightly", namespace: "shop" },
    spec: { schedule: "0 3 * * *", jobTemplate: { spec: {} } },
  });
  for (const [index, name] of ["nightly-1001", "nightly-1002", "manual-1"].entries()) {
    const labels = { "job-name": name };
    const owned = job(name, name.startsWith("nightly") ? cronJob : undefined, labels);
    pods[name] = api.scenario.createPod({
      namespace: "shop",
      name: `${name}-x`,
      node: "node-1",
      labels,
      owner: { kind: "Job", name, uid: uidOf(owned), apiVersion: "batch/v1" },
      containers: [{ name: "task", ...(index === 1 ? { waitingReason: "CrashLoopBackOff" } : {}) }],
    });
  }
  pods.bare = api.scenario.createPod({
    namespace: "shop",
    name: "debug",
    node: "node-1",
    containers: [{ name: "sh", waitingReason: "CrashLoopBackOff" }],
  });
  pods.mirror = api.scenario.createPod({
    namespace: "shop",
    name: "etcd-node-1",
    node: "node-1",
    owner: { kind: "Node", name: "node-1", uid: "node-uid", apiVersion: "v1" },
  });
});

afterAll(async () => {
  await api.stop();
});

describe("the top workload", () => {
  test("a Deployment's crash-looping pod names the Deployment and carries its pods as radius", async () => {
    api.clearRequests();
    const bundle = await enrich(pods.crashing as KubeObject);
    expect(head(bundle)).toBe(
      "kind=bundle.target severity=info namespace=shop kind_of_object=Pod name=web-7c9-a workload=Deployment/shop/web pods=2 sections=spec,radius,logs",
    );
    expect(lines(bundle, "kind=radius.")).toEqual([
      "kind=radius.pods severity=warning namespace=shop kind_of_object=Deployment name=web section=radius pods=2 ready=1 namespaces=1",
      "kind=radius.pod severity=critical namespace=shop kind_of_object=Pod name=web-7c9-a reason=CrashLoopBackOff section=radius phase=Running node=node-1 restarts=4",
    ]);
    expect(bundle).toContain('line="panic: db unreachable"');
    expect(bundle).not.toContain("enrichment_error");
    expect(gets()).toContain("/apis/apps/v1/namespaces/shop/replicasets/web-7c9");
    expect(gets()).toContain("/apis/apps/v1/namespaces/shop/deployments/web");
  });

  test("a radius over the cap leaves the command that lists the top workload's pods", async () => {
    const bundle = await enrich(pods.crashing as KubeObject, { capBytes: 700 });
    expect(head(bundle)).toContain("workload=Deployment/shop/web pods=2 sections=spec");
    expect(bundle).toContain('overflow section=radius cmd="kubectl get pods -n shop -l app=web -o wide"\n');
    expect(bundle).toContain(
      'overflow section=logs cmd="kubectl logs -n shop web-7c9-a --all-containers --previous --tail=20"\n',
    );
  });

  test("a Job pod under a CronJob names the CronJob; its radius is the CronJob's pods by owner", async () => {
    api.clearRequests();
    const bundle = await enrich(pods["nightly-1002"] as KubeObject, { capBytes: 600 });
    expect(head(bundle)).toContain("name=nightly-1002-x workload=CronJob/shop/nightly pods=2 sections=spec");
    expect(bundle).toContain(
      "overflow section=radius cmd=\"kubectl get pods -n shop -l 'job-name in (nightly-1001,nightly-1002)' -o wide\"\n",
    );
    expect(gets().some((path) => path.includes("/cronjobs"))).toBe(false);
    const full = await enrich(pods["nightly-1002"] as KubeObject);
    expect(lines(full, "kind=radius.")).toEqual([
      "kind=radius.pods severity=warning namespace=shop kind_of_object=CronJob name=nightly section=radius pods=2 ready=1 namespaces=1",
      "kind=radius.pod severity=critical namespace=shop kind_of_object=Pod name=nightly-1002-x reason=CrashLoopBackOff section=radius phase=Running node=node-1 restarts=0",
    ]);
  });

  test("a Job of nobody's is its own top workload", async () => {
    const bundle = await enrich(pods["manual-1"] as KubeObject);
    expect(head(bundle)).toContain("workload=Job/shop/manual-1 pods=1 ");
    expect(bundle).toContain("kind_of_object=Job name=manual-1 section=radius pods=1 ready=1 namespaces=1\n");
  });

  test("a bare pod, and a pod owned by no workload kind, name themselves and have no radius", async () => {
    for (const [pod, name] of [
      [pods.bare, "debug"],
      [pods.mirror, "etcd-node-1"],
    ] as const) {
      api.clearRequests();
      const bundle = await enrich(pod as KubeObject);
      expect(head(bundle)).toContain(`name=${name} workload=Pod/shop/${name} pods=1 `);
      expect(bundle).not.toContain("section=radius");
      expect(gets().filter((path) => path.startsWith("/apis/"))).toEqual([]);
    }
  });
});

describe("the topology graph", () => {
  test("with storms' graph synced, the pod's ReplicaSet comes from it: only the Deployment is read", async () => {
    const graph = new ClusterGraph(
      connection,
      createLogger("error", () => undefined),
      () => undefined,
      {
        pods: false,
        replicaSets: true,
      },
    );
    await graph.start();
    try {
      expect(graph.synced).toBe(true);
      api.clearRequests();
      const bundle = await enrich(pods.crashing as KubeObject, { cachedOwner: graph.replicaSet });
      expect(head(bundle)).toContain("workload=Deployment/shop/web pods=2 sections=spec,radius,logs");
      expect(gets().filter((path) => path.startsWith("/apis/"))).toEqual([
        "/apis/apps/v1/namespaces/shop/deployments/web",
      ]);
    } finally {
      await graph.stop();
    }
  });
});

describe("a chain that cannot be read to the top", () => {
  test("the Deployment's GET fails: the bundle still names it, with the resolve trailer and the ReplicaSet's pods", async () => {
    api.faults.failNext({ code: 500, method: "GET", path: "/deployments/web" });
    const bundle = await enrich(pods.crashing as KubeObject);
    expect(head(bundle)).toBe(
      "kind=bundle.target severity=info namespace=shop kind_of_object=Pod name=web-7c9-a workload=Deployment/shop/web pods=2 sections=spec,radius,logs",
    );
    expect(bundle).toContain(
      "kind=radius.pods severity=warning namespace=shop kind_of_object=ReplicaSet name=web-7c9 section=radius pods=2 ready=1 namespaces=1\n",
    );
    expect(lines(bundle, "enrichment_error")).toEqual([
      'enrichment_error stage=resolve error="GET /apis/apps/v1/namespaces/shop/deployments/web: HTTP 500"',
    ]);
  });

  test("--enrich-lists without replicasets stops at the ReplicaSet, read neither it nor the Deployment", async () => {
    api.clearRequests();
    const bundle = await enrich(pods.crashing as KubeObject, {
      lists: { all: true, include: [], exclude: ["replicasets"] },
    });
    expect(head(bundle)).toContain("workload=ReplicaSet/shop/web-7c9 pods=1 sections=spec,logs");
    expect(bundle).not.toContain("enrichment_error");
    expect(gets().filter((path) => path.startsWith("/apis/"))).toEqual([]);
  });

  test("with preflight, a chain kind the cluster denies is reviewed away before its read: skipped=", async () => {
    api.scenario.setGrants([
      { verbs: ["get", "list", "watch", "create"], resources: ["pods", "pods/log", "events", "replicasets"] },
      { verbs: ["create"], resources: ["selfsubjectaccessreviews"] },
    ]);
    try {
      api.clearRequests();
      const bundle = await enrich(pods.crashing as KubeObject, {
        preflight: (check) => reviewAccess(connection, check),
      });
      expect(head(bundle)).toContain(
        "workload=Deployment/shop/web pods=2 skipped=deployments sections=spec,radius,logs",
      );
      expect(bundle).toContain("kind_of_object=ReplicaSet name=web-7c9 section=radius pods=2");
      expect(gets().some((path) => path.includes("/deployments/"))).toBe(false);
      expect(bundle).not.toContain("enrichment_error");
    } finally {
      api.scenario.setGrants(undefined);
    }
  });
});
