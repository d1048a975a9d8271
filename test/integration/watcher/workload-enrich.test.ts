/**
 * Enrichment for the workload kinds and nodes against the fake kube-apiserver (D432): a
 * Deployment's bundle has its spec (replica counts, unhealthy conditions, template images), its
 * events, the radius of its pods (a count and each pod not Ready) and the log tail of its first
 * failing pod; a StatefulSet, DaemonSet and Job get the same shape with their own counts; a Node's
 * bundle has its spec (Ready, abnormal conditions, taints), its events and the pods bound to it,
 * and no logs. A Service (no gatherer) gets no bundle; `--enrich-lists` subtracts a kind's read.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import type { KubeConnection } from "../../../src/watcher/kube/kube-connection.ts";
import { incidentEnricher } from "../../../src/watcher/workload-enricher.ts";
import { enrichSignal } from "../../support/enrich-signal.ts";

let api: FakeApiserver;
let connection: KubeConnection;
const settings = { capBytes: 8192, logLines: 20, timeoutMs: 5000 };

const uidOf = (object: Record<string, unknown>) => String((object.metadata as { uid: string }).uid);
const signalOf = enrichSignal;
const head = (bundle: string) => bundle.split("\n")[0] ?? "";
const lines = (bundle: string, prefix: string) => bundle.split("\n").filter((line) => line.startsWith(prefix));

function workload(kind: string, apiVersion: string, name: string, status: Record<string, unknown>) {
  return api.scenario.apply({
    apiVersion,
    kind,
    metadata: { name, namespace: "shop" },
    spec: {
      replicas: 3,
      selector: { matchLabels: { app: name } },
      template: { spec: { containers: [{ name: "app", image: `registry.example.com/${name}:v7` }] } },
    },
    status,
  });
}

beforeAll(async () => {
  api = await startFakeApiserver({ tokens: { t: "watcher" } });
  connection = { server: api.url, tls: {}, token: () => "t" };
  for (const [index, waiting] of [undefined, undefined, "CrashLoopBackOff"].entries())
    api.scenario.createPod({
      namespace: "shop",
      name: `web-${index}`,
      node: "node-b",
      labels: { app: "web" },
      containers: [{ name: "app", image: "registry.example.com/web:v7", waitingReason: waiting, restartCount: 5 }],
    } as never);
  api.scenario.setPodLogs("shop", "web-2", "app", { current: "", previous: "panic: db unreachable\n" });
  api.scenario.createPod({ namespace: "other", name: "batch-1", node: "node-b", labels: { app: "batch" } } as never);
});

afterAll(async () => {
  await api.stop();
});

describe("workload kinds", () => {
  test("a Deployment: spec, delta, radius and logs of its failing pod", async () => {
    const deployment = workload("Deployment", "apps/v1", "web", {
      replicas: 3,
      readyReplicas: 2,
      updatedReplicas: 3,
      availableReplicas: 2,
      conditions: [
        { type: "Available", status: "False", reason: "MinimumReplicasUnavailable", message: "not enough ready" },
        { type: "Progressing", status: "True", reason: "NewReplicaSetAvailable" },
      ],
    });
    api.scenario.recordEvent({
      involvedObject: deployment,
      reason: "ScalingReplicaSet",
      message: "Scaled up replica set web-7 to 3",
      type: "Normal",
    });
    const bundle = String(
      await incidentEnricher(connection, settings)(signalOf("Deployment", "shop", "web", uidOf(deployment))),
    );
    expect(head(bundle)).toBe(
      "kind=bundle.target severity=info namespace=shop kind_of_object=Deployment name=web workload=Deployment/shop/web pods=3 sections=spec,delta,radius,logs",
    );
    expect(bundle).toContain(
      "kind=spec.resource severity=info namespace=shop kind_of_object=Deployment name=web section=spec desired=3 ready=2 updated=3 available=2\n",
    );
    expect(bundle).toContain(
      'kind=spec.condition severity=warning namespace=shop kind_of_object=Deployment name=web reason=MinimumReplicasUnavailable message="not enough ready" section=spec condition=Available status=False\n',
    );
    expect(lines(bundle, "kind=spec.condition")).toHaveLength(1);
    expect(bundle).toContain("section=spec container=app image=registry.example.com/web:v7");
    expect(bundle).toContain("reason=ScalingReplicaSet");
    expect(bundle).toContain(
      "kind=radius.pods severity=warning namespace=shop kind_of_object=Deployment name=web section=radius pods=3 ready=2 namespaces=1\n",
    );
    expect(lines(bundle, "kind=radius.pod ")).toEqual([
      "kind=radius.pod severity=critical namespace=shop kind_of_object=Pod name=web-2 reason=CrashLoopBackOff section=radius phase=Running node=node-b restarts=5",
    ]);
    expect(bundle).toContain(
      'kind=log.line severity=info namespace=shop kind_of_object=Pod name=web-2 section=logs container=app line="panic: db unreachable"',
    );
    expect(bundle).not.toContain("enrichment_error");
  });

  test("a StatefulSet, a DaemonSet and a Job each report their own counts", async () => {
    const enrich = incidentEnricher(connection, settings);
    const sts = workload("StatefulSet", "apps/v1", "web", { replicas: 3, readyReplicas: 1 });
    expect(String(await enrich(signalOf("StatefulSet", "shop", "web", uidOf(sts))))).toContain(
      "kind_of_object=StatefulSet name=web section=spec desired=3 ready=1 updated=0 available=0\n",
    );
    const ds = workload("DaemonSet", "apps/v1", "web", { desiredNumberScheduled: 4, numberReady: 3 });
    const dsBundle = String(await enrich(signalOf("DaemonSet", "shop", "web", uidOf(ds))));
    expect(dsBundle).toContain("section=spec desired=4 ready=3 updated=0 available=0\n");
    expect(head(dsBundle)).toEndWith("workload=DaemonSet/shop/web pods=3 sections=spec,radius,logs");
    const job = workload("Job", "batch/v1", "web", {
      failed: 6,
      conditions: [
        {
          type: "Failed",
          status: "True",
          reason: "BackoffLimitExceeded",
          message: "Job has reached the specified backoff limit",
        },
      ],
    });
    const jobBundle = String(await enrich(signalOf("Job", "shop", "web", uidOf(job))));
    expect(jobBundle).toContain("section=spec completions=1 succeeded=0 failed=6 active=0\n");
    expect(jobBundle).toContain("reason=BackoffLimitExceeded");
  });

  test("--enrich-lists without deployments leaves out the spec and never reads the Deployment", async () => {
    const deployment = api.scenario.get({ apiVersion: "apps/v1", kind: "Deployment", namespace: "shop", name: "web" });
    api.clearRequests();
    const bundle = String(
      await incidentEnricher(connection, { ...settings, lists: { all: true, include: [], exclude: ["deployments"] } })(
        signalOf("Deployment", "shop", "web", uidOf(deployment as Record<string, unknown>)),
      ),
    );
    expect(head(bundle)).toEndWith("pods=0 sections=delta");
    expect(api.requests().some((request) => request.path.includes("/deployments/"))).toBe(false);
  });
});

describe("nodes", () => {
  test("a Node: spec with its conditions and taints, its events, the pods bound to it; no logs", async () => {
    const node = api.scenario.apply({
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: "node-b" },
      spec: { unschedulable: true, taints: [{ key: "node.kubernetes.io/not-ready", effect: "NoExecute" }] },
      status: {
        conditions: [
          { type: "DiskPressure", status: "True", reason: "KubeletHasDiskPressure", message: "disk full" },
          { type: "Ready", status: "False", reason: "KubeletNotReady", message: "PLEG is not healthy" },
        ],
        allocatable: { cpu: "4", memory: "16Gi", pods: "110" },
        nodeInfo: { kubeletVersion: "v1.32.0" },
      },
    });
    api.scenario.recordEvent({
      involvedObject: node,
      reason: "NodeNotReady",
      message: "Node node-b status is now: NodeNotReady",
      type: "Warning",
    });
    const bundle = String(await incidentEnricher(connection, settings)(signalOf("Node", "", "node-b", uidOf(node))));
    expect(head(bundle)).toBe(
      "kind=bundle.target severity=info kind_of_object=Node name=node-b workload=Node//node-b pods=4 sections=spec,delta,radius",
    );
    expect(bundle).toContain(
      "kind=spec.resource severity=info kind_of_object=Node name=node-b section=spec ready=False unschedulable=true kubelet=v1.32.0 cpu=4 memory=16Gi max_pods=110\n",
    );
    expect(bundle).toContain(
      'kind=spec.condition severity=critical kind_of_object=Node name=node-b reason=KubeletNotReady message="PLEG is not healthy" section=spec condition=Ready status=False\n',
    );
    expect(bundle).toContain("reason=KubeletHasDiskPressure");
    expect(bundle).toContain(
      "kind=spec.taint severity=info kind_of_object=Node name=node-b section=spec taint=node.kubernetes.io/not-ready effect=NoExecute\n",
    );
    expect(bundle).toContain("reason=NodeNotReady");
    expect(bundle).toContain("section=radius pods=4 ready=3 namespaces=2\n");
    expect(bundle).not.toContain("section=logs");
    expect(bundle).not.toContain("enrichment_error");
  });

  test("a kind with no gatherer gets no bundle", async () => {
    expect(await incidentEnricher(connection, settings)(signalOf("Service", "shop", "web", "uid-x"))).toBeUndefined();
  });
});
