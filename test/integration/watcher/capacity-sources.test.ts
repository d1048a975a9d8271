/**
 * The capacity source (D393-D397) in the watcher against the fake apiserver: the autoscaler's
 * events (NotTriggerScaleUp pages `capacity.pending`, ScaleDownFailed a warning, TriggeredScaleUp
 * only stored as info; the listed history pages nothing; another component's event is not
 * watched), scale-up gaps from the status ConfigMap in both shapes at 3m by the autoscaler's
 * clock (critical in Backoff with an error), pending pods aged past `--pending-age` (and one
 * already old when the watcher starts; a pod scheduled in time never pages), and the bin-packing
 * forecast of a node group filling up; RBAC: the narrow grant (one ConfigMap in kube-system) is
 * enough, its absence disables capacity under `auto` with one line naming where the grant goes
 * and refuses startup when named.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Grant } from "../../../scripts/fake-apiserver/access.ts";
import { autoscalerStatusText, autoscalerStatusYaml } from "../../../scripts/fake-apiserver/builders-capacity.ts";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { OccurrenceStore } from "../../../src/watcher/occurrence-store.ts";
import { StartupRefusal, type RunningWatcher, startWatcher } from "../../../src/watcher/watch-runner.ts";
import { tempDir, waitFor } from "../../support/daemon.ts";

let api: FakeApiserver;
beforeAll(async () => {
  api = await startFakeApiserver();
});
afterAll(() => api.stop());

async function watcher(args: string[], lines: string[] = [], printed: string[] = []) {
  const parsed = watcherConfigFromArgv([
    "--dry-run",
    "--kubeconfig=/nonexistent",
    "--cluster-name=cap-test",
    "--storm=off",
    "--recovery-stable-for=0",
    // Warnings go to the watchboard (D418): a digest per warning, printed at once.
    "--watchboard-batch=1",
    "--access-recheck=0",
    "--capacity-poll=100ms",
    ...args,
  ]);
  if (!parsed.ok) throw new Error(parsed.error);
  return startWatcher(
    parsed.value,
    createLogger("info", (line) => lines.push(line)),
    {
      connection: { server: api.url, tls: {}, token: () => undefined },
      stdout: (text) => printed.push(text),
      env: {},
    },
  );
}

const ready = (running: RunningWatcher) => waitFor(() => (running.ready() ? true : undefined), 5000, "ready");
const payloadOf = (printed: string[], kind: string, text: string) =>
  waitFor(
    () => printed.find((one) => one.includes(`"kind": "${kind}"`) && one.includes(text)),
    8000,
    `${kind} ${text}`,
  );
const field = (payload: string, name: string) => /"([^"]+)"/.exec(payload.split(`"${name}": `)[1] ?? "")?.[1] ?? "";
const secondsOf = (iso: string) => Math.floor(Date.parse(iso) / 1000) * 1000;

describe("autoscaler events", () => {
  test("NotTriggerScaleUp and ScaleDownFailed page; TriggeredScaleUp is stored as info, never paged; history and other components are not", async () => {
    const web = { kind: "Pod", namespace: "shop", name: "web-1", uid: "uid-web-1" };
    const node = { kind: "Node", name: "pool-a-1", uid: "uid-node-a1" };
    api.scenario.recordAutoscalerEvent({ reason: "NotTriggerScaleUp", involvedObject: web, message: "old history" });
    const store = join(tempDir("capacity-store"), "occ.db");
    const printed: string[] = [];
    const running = await watcher(["--sources=cluster-events,capacity", `--store=${store}`], [], printed);
    try {
      await ready(running);
      api.scenario.recordEvent({
        involvedObject: web,
        reason: "NotTriggerScaleUp",
        message: "from kubelet",
        type: "Normal",
      });
      api.scenario.recordAutoscalerEvent({
        reason: "TriggeredScaleUp",
        involvedObject: web,
        message: "pod triggered scale-up: [{pool-a 2->3 (max: 5)}]",
      });
      api.scenario.recordAutoscalerEvent({
        reason: "NotTriggerScaleUp",
        involvedObject: { ...web, name: "web-2", uid: "uid-web-2" },
        message: "pod didn't trigger scale-up: 1 max node group size reached",
      });
      api.scenario.recordAutoscalerEvent({
        reason: "ScaleDownFailed",
        involvedObject: node,
        type: "Warning",
        message: "failed to drain the node, aborting ScaleDown",
      });
      const pending = await payloadOf(printed, "capacity.pending", "max node group size reached");
      expect(pending).toContain('"severity": "warning"');
      expect(pending).toContain('"uid": "uid-web-2"');
      expect(pending).toContain('"reason": "pending"');
      const scaleDown = await payloadOf(printed, "capacity.scaledown", "failed to drain");
      expect(scaleDown).toContain('"severity": "warning"');
      await waitFor(
        () =>
          running.metrics
            .render()
            .includes('watcher_findings_total{cluster="cap-test",kind="capacity.scaleup",severity="info"} 1')
            ? true
            : undefined,
        5000,
        "the scale-up counted as an info finding",
      );
      await running.dispatcher.idle();
      expect(printed.some((one) => one.includes("capacity.scaleup"))).toBe(false);
      expect(printed.some((one) => one.includes("old history") || one.includes("from kubelet"))).toBe(false);
    } finally {
      await running.stop();
    }
    const rows = new OccurrenceStore({ path: store, maxBytes: 1 << 20, ttlMs: 3_600_000 });
    try {
      expect(rows.rows().filter((row) => row.kind === "capacity.scaleup")).toMatchObject([
        { route: "info-stored", severity: "info", uid: "uid-web-1" },
      ]);
    } finally {
      rows.close();
    }
  });
});

describe("status, pending pods and the forecast (one watcher)", () => {
  let running: RunningWatcher;
  const printed: string[] = [];
  const lines: string[] = [];
  const startedAt = Date.now();
  beforeAll(async () => {
    // Already Pending for 20m when the watcher starts: level-triggered, critical once armed.
    api.scenario.applyCapacityPod({
      namespace: "batch",
      name: "stuck-old",
      cpu: "2",
      unschedulableSince: new Date(startedAt - 20 * 60_000).toISOString(),
    });
    running = await watcher(["--sources=cluster-events,capacity", "--pending-age=1500ms"], lines, printed);
    await ready(running);
  });
  afterAll(() => running.stop());

  test("a pod already unschedulable for 20m pages critical at the first judgement", async () => {
    const page = await payloadOf(printed, "capacity.pending-aged", "batch/stuck-old");
    expect(page).toContain('"severity": "critical"');
    expect(page).toContain("Pending and Unschedulable for 20m");
  });

  test("pending-aged: a warning once Unschedulable for --pending-age, not before; a pod scheduled in time never pages", async () => {
    const since = new Date().toISOString();
    api.scenario.applyCapacityPod({ namespace: "batch", name: "late", cpu: "1", unschedulableSince: since });
    api.scenario.applyCapacityPod({ namespace: "batch", name: "lucky", cpu: "1", unschedulableSince: since });
    api.scenario.applyCapacityNode({ name: "spare-1", pool: "spare", cpu: "64", memory: "256Gi" });
    api.scenario.applyCapacityPod({ namespace: "batch", name: "lucky", node: "spare-1" });
    const page = await payloadOf(printed, "capacity.pending-aged", "batch/late");
    expect(page).toContain('"severity": "warning"');
    expect(Date.parse(field(page, "first_seen")) - secondsOf(since)).toBeGreaterThanOrEqual(1500);
    await running.dispatcher.idle();
    expect(printed.some((one) => one.includes("batch/lucky"))).toBe(false);
  });

  test("scaleup_gap: InProgress 3m by the autoscaler's clock pages a warning, Backoff with an error critical; the text shape too", async () => {
    const threeMinutesAgo = Date.now() - 3 * 60_000;
    const since = new Date(threeMinutesAgo + 1500).toISOString();
    api.scenario.setAutoscalerStatus(
      autoscalerStatusYaml([
        { name: "pool-a", scaleUp: "InProgress", since, ready: 2, target: 4 },
        {
          name: "pool-b",
          scaleUp: "Backoff",
          since: new Date(threeMinutesAgo - 60_000).toISOString(),
          ready: 0,
          target: 1,
          errorCode: "QUOTA_EXCEEDED",
          errorMessage: "Quota 'CPUS' exceeded",
        },
        { name: "pool-c", scaleUp: "NoActivity", since: new Date(0).toISOString() },
      ]),
    );
    const critical = await payloadOf(printed, "capacity.scaleup_gap", "node group pool-b");
    expect(critical).toContain('"severity": "critical"');
    expect(critical).toContain("QUOTA_EXCEEDED: Quota 'CPUS' exceeded");
    const warning = await payloadOf(printed, "capacity.scaleup_gap", "node group pool-a");
    expect(warning).toContain('"severity": "warning"');
    expect(warning).toContain('"uid": "nodegroup:pool-a"');
    expect(Date.parse(field(warning, "first_seen")) - secondsOf(since)).toBeGreaterThanOrEqual(3 * 60_000);
    api.scenario.setAutoscalerStatus(
      autoscalerStatusText([
        { name: "pool-t", scaleUp: "InProgress", since: new Date(threeMinutesAgo).toISOString(), ready: 1, target: 3 },
      ]),
    );
    const text = await payloadOf(printed, "capacity.scaleup_gap", "node group pool-t");
    expect(text).toContain("(ready=1 cloudProviderTarget=3)");
    await running.dispatcher.idle();
    expect(printed.filter((one) => one.includes("capacity.scaleup_gap"))).toHaveLength(3);
  });

  test("cluster_forecast: a node group whose requests climb toward allocatable pages, from 10 samples", async () => {
    api.scenario.applyCapacityNode({ name: "fill-1", pool: "fill", cpu: "10", memory: "40Gi" });
    // One more 300m pod about every 150 ms (a poll is 100 ms): requests climb toward the 10 cores.
    let index = 0;
    let last = 0;
    const page = await waitFor(
      () => {
        if (Date.now() - last >= 150) {
          last = Date.now();
          api.scenario.applyCapacityPod({ namespace: "load", name: `load-${index++}`, cpu: "300m", node: "fill-1" });
        }
        return printed.find(
          (one) => one.includes('"kind": "capacity.cluster_forecast"') && one.includes("node group fill"),
        );
      },
      10_000,
      "the forecast's payload",
    );
    expect(page).toContain('"uid": "nodegroup:fill"');
    expect(page).toContain('"severity": "critical"');
    const samples = Number(/\((\d+) samples over/.exec(page)?.[1]);
    expect(samples).toBeGreaterThanOrEqual(10);
  });
});

describe("RBAC", () => {
  const base: Grant[] = [
    { verbs: ["create"], apiGroups: ["authorization.k8s.io"], resources: ["selfsubjectaccessreviews"] },
    { verbs: ["list", "watch"], apiGroups: [""], resources: ["events", "pods", "nodes"] },
  ];
  const statusRole: Grant = {
    verbs: ["get"],
    apiGroups: [""],
    resources: ["configmaps"],
    namespaces: ["kube-system"],
    resourceNames: ["cluster-autoscaler-status"],
  };

  test("granted (cluster-wide watches plus one ConfigMap in kube-system): auto enables capacity and is ready", async () => {
    api.scenario.setGrants([...base, statusRole]);
    api.scenario.setAutoscalerStatus(autoscalerStatusYaml([]));
    api.clearRequests();
    const lines: string[] = [];
    try {
      const running = await watcher(["--sources=auto"], lines);
      try {
        await ready(running);
        // The Role's one object is enough for the poll itself.
        await waitFor(
          () =>
            api
              .requests()
              .find(
                (request) => request.path.endsWith("/configmaps/cluster-autoscaler-status") && request.status === 200,
              ),
          5000,
          "the status ConfigMap read with the narrow grant",
        );
      } finally {
        await running.stop();
      }
      expect(lines.filter((line) => line.includes("source capacity:"))).toEqual([
        expect.stringContaining("source capacity: enabled"),
      ]);
    } finally {
      api.scenario.setGrants(undefined);
    }
  });

  test("without the ConfigMap grant: auto disables capacity with one line naming where it goes; named, startup refuses", async () => {
    api.scenario.setGrants(base);
    try {
      const lines: string[] = [];
      const running = await watcher(["--sources=auto"], lines);
      await running.stop();
      expect(lines.filter((line) => line.includes("source capacity:"))).toEqual([
        expect.stringContaining(
          'source capacity: disabled (missing "get configmaps cluster-autoscaler-status in namespace kube-system" — grant it (a Role and RoleBinding in kube-system: docs/watcher.md#capacity), or name it in --sources to make this fatal)',
        ),
      ]);
      const refused = await watcher(["--sources=cluster-events,capacity"]).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(StartupRefusal);
      expect((refused as Error).message).toContain(
        'source "capacity" requires permission to "get configmaps cluster-autoscaler-status in namespace kube-system"',
      );
    } finally {
      api.scenario.setGrants(undefined);
    }
  });
});

describe("the fake apiserver's capacity routes", () => {
  // The fake's answers, read field by field.
  type Any = any;
  const post = (route: string, body: unknown) =>
    fetch(`${api.url}/_fake/capacity/${route}`, { method: "POST", body: JSON.stringify(body) });

  test("nodes, pods, the status ConfigMap (YAML or text) and autoscaler events over HTTP; a bad body is a 400", async () => {
    expect((await post("nodes", { name: "http-1", pool: "http", cpu: "2", memory: "8Gi" })).status).toBe(200);
    const pod: Any = await (await post("pods", { namespace: "http", name: "p1", cpu: "500m" })).json();
    expect(pod.status.conditions[0]).toMatchObject({ type: "PodScheduled", status: "False", reason: "Unschedulable" });
    expect(pod.spec.containers[0].resources).toEqual({ requests: { cpu: "500m" } });
    await post("autoscaler-status", {
      format: "text",
      groups: [{ name: "http", scaleUp: "Backoff", ready: 0, target: 1 }],
    });
    const configMap: Any = await (
      await fetch(`${api.url}/api/v1/namespaces/kube-system/configmaps/cluster-autoscaler-status`)
    ).json();
    expect(configMap.data.status).toContain("ScaleUp:     Backoff (ready=0 cloudProviderTarget=1)");
    const event: Any = await (
      await post("events", {
        reason: "TriggeredScaleUp",
        involvedObject: { kind: "Pod", namespace: "http", name: "p1" },
      })
    ).json();
    expect(event.source).toEqual({ component: "cluster-autoscaler" });
    const node: Any = await (await fetch(`${api.url}/api/v1/nodes/http-1`)).json();
    expect(node.status.allocatable).toMatchObject({ cpu: "2", memory: "8Gi" });
    expect(node.metadata.labels["cloud.google.com/gke-nodepool"]).toBe("http");
    expect((await post("autoscaler-status", { nothing: true })).status).toBe(400);
  });
});
