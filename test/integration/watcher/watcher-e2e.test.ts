/**
 * The watcher end to end: the fake kube-apiserver, a real `spar agent` (the watcher a proxy
 * identity asserting the on-call owner) and the watcher reading a kubeconfig. A pod in
 * CrashLoopBackOff opens exactly one session with one inject; the same incident repeated inside
 * the window opens nothing; five pods failing on one node form one storm session; a Deployment's
 * pod's bundle names the Deployment (its ReplicaSet from the storm graph); a restart with
 * the persisted dedup cache re-injects nothing; a dropped watch and a 410 lose nothing.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { StartupRefusal, startWatcher } from "../../../src/watcher/watch-runner.ts";
import { waitFor } from "../../support/daemon.ts";
import {
  ONCALL_TOKEN,
  WATCHER_ENV,
  injectedPayloads,
  startTriageWatcher,
  triageScope,
} from "../../support/triage-daemon.ts";

const env = WATCHER_ENV;
const triage = triageScope();

/** Crash-loop back-off fires on its first event here. */
const watcher = (...extra: string[]) =>
  startTriageWatcher(triage.daemon, triage.kubeconfig, ["--backoff-min-count=1", ...extra]);

async function ownerSessions(): Promise<string[]> {
  const listed = (await (
    await fetch(`${triage.daemon.baseUrl}/sessions`, { headers: { authorization: `Bearer ${ONCALL_TOKEN}` } })
  ).json()) as { sessions: Array<{ sessionID: string }> };
  return listed.sessions.map((session) => session.sessionID).filter((id) => id.startsWith("sess-"));
}

const injected = (sessionId: string, count: number) => injectedPayloads(triage.daemon, sessionId, count);

function crashLoop(namespace: string, name: string, node = "node-a") {
  const pod = triage.api.scenario.createPod({
    namespace,
    name,
    node,
    containers: [
      { name: "app", image: "registry.example.com/app:v1", waitingReason: "CrashLoopBackOff", restartCount: 4 },
    ],
  } as never);
  triage.api.scenario.recordEvent({
    involvedObject: pod,
    reason: "BackOff",
    message: "Back-off restarting failed container app in pod",
    type: "Warning",
    source: { component: "kubelet", host: node },
    fieldPath: "spec.containers{app}",
  });
  return pod;
}

describe("per-incident", () => {
  test("CrashLoopBackOff: one session, one inject with kind, reason, cluster and identity; a repeat in the window opens nothing", async () => {
    const { running, log } = await watcher("--storm=off");
    try {
      const before = await ownerSessions();
      const pod = crashLoop("checkout", "api-1");
      const uid = String((pod.metadata as { uid: string }).uid);
      const fired = await waitFor(
        () => log.find((line) => line.includes("fire BackOff pod=checkout/api-1")),
        8000,
        "fire line",
      );
      const sid = /sid=(\S+)/.exec(fired)?.[1] ?? "";
      expect((await ownerSessions()).filter((id) => !before.includes(id))).toEqual([sid]);
      const [payload] = await injected(sid, 1);
      const bundle = String((payload?.enrichment as { bundle?: string } | undefined)?.bundle ?? "");
      expect(bundle.split("\n")[0]).toStartWith(
        "kind=bundle.target severity=info namespace=checkout kind_of_object=Pod name=api-1 workload=Pod/checkout/api-1 pods=1 sections=spec,delta",
      );
      expect(bundle).toContain(
        "kind=spec.container severity=critical namespace=checkout kind_of_object=Pod name=api-1 reason=CrashLoopBackOff section=spec container=app image=registry.example.com/app:v1",
      );
      expect(bundle).toContain("reason=BackOff");
      expect(payload).toMatchObject({
        kind: "cluster-event",
        reason: "BackOff",
        cluster: "kind-test",
        namespace: "checkout",
        kind_of_object: "Pod",
        name: "api-1",
        uid,
        container: "spec.containers{app}",
        count: 1,
        type: "Warning",
        context: { node: "node-a" },
      });
      triage.api.scenario.recordEvent({
        involvedObject: pod,
        reason: "BackOff",
        message: "Back-off restarting failed container app in pod",
        type: "Warning",
        source: { component: "kubelet", host: "node-a" },
        fieldPath: "spec.containers{app}",
        lastTimestamp: new Date(Date.now() + 2000).toISOString(),
      });
      await waitFor(
        () => log.find((line) => line.includes("dedup BackOff pod=checkout/api-1 (count=2")),
        8000,
        "dedup line",
      );
      await running.dispatcher.idle();
      expect((await ownerSessions()).filter((id) => !before.includes(id))).toEqual([sid]);
      const metrics = running.metrics.render();
      expect(metrics).toContain(
        'watcher_events_injected_total{cluster="kind-test",namespace="checkout",reason="BackOff"} 1',
      );
      const entry = running.dispatcher.dedup.get(`${uid}|CrashLoopBackOff`);
      expect(entry).toMatchObject({ sessionId: sid, count: 2 });
      expect(await injected(sid, 1)).toHaveLength(1);
    } finally {
      await running.stop();
    }
  }, 20_000);

  test("restart with the persisted dedup cache: the re-listed incident is not injected again; a watch drop and a 410 lose nothing", async () => {
    const persist = join(triage.dir, "dedup.json");
    const first = await watcher("--storm=off", `--dedup-persist=${persist}`);
    const pod = crashLoop("orders", "db-1");
    await waitFor(() => first.log.find((line) => line.includes("fire BackOff pod=orders/db-1")), 8000, "first fire");
    await first.running.stop();
    const second = await watcher("--storm=off", `--dedup-persist=${persist}`);
    try {
      expect(second.log.join("")).toContain("dedup: restored 1 entries");
      triage.api.faults.dropWatches("reset");
      triage.api.scenario.recordEvent({
        involvedObject: pod,
        reason: "BackOff",
        message: "Back-off restarting failed container app in pod",
        type: "Warning",
        source: { host: "node-a" },
        fieldPath: "spec.containers{app}",
        lastTimestamp: new Date(Date.now() + 3000).toISOString(),
      });
      await waitFor(
        () => second.log.find((line) => line.includes("dedup BackOff pod=orders/db-1")),
        10_000,
        "dedup after restart",
      );
      triage.api.faults.expireResourceVersions({ midStream: true });
      crashLoop("orders", "db-2");
      await waitFor(
        () => second.log.find((line) => line.includes("fire BackOff pod=orders/db-2")),
        10_000,
        "fire after a 410",
      );
      await second.running.dispatcher.idle();
      expect(second.log.filter((line) => line.includes("fire BackOff pod=orders/db-1"))).toEqual([]);
      expect(second.log.filter((line) => line.includes("fire BackOff pod=orders/db-2"))).toHaveLength(1);
    } finally {
      await second.running.stop();
    }
  }, 45_000);
});

describe("storms", () => {
  test("five pods failing on one node: one storm session listing its members", async () => {
    // The node exists, as in any cluster: a pod the graph has not listed yet is keyed by the node
    // its event reports only when the graph holds that node (D453).
    triage.api.scenario.createNode({ name: "node-storm" });
    const { running, log } = await watcher("--storm=on", "--storm-min=3");
    try {
      for (let i = 1; i <= 5; i++) crashLoop(`team-${i % 2}`, `worker-${i}`, "node-storm");
      const formed = await waitFor(
        () => log.find((line) => line.includes("storm formed on Node node-storm")),
        10_000,
        "storm",
      );
      const stormSid = /sid=(\S+)/.exec(formed)?.[1] ?? "";
      await waitFor(
        () =>
          log.filter((line) => line.includes(`→ sid=${stormSid}`)).length >= 1 && running.dispatcher.dedup.size >= 5
            ? true
            : undefined,
        10_000,
        "members",
      );
      await running.dispatcher.idle();
      expect(log.filter((line) => line.includes("storm formed"))).toHaveLength(1);
      const payloads = await injected(stormSid, 3);
      const storm = payloads.find((payload) => payload.kind === "storm") ?? {};
      expect(storm).toMatchObject({
        kind: "storm",
        ancestor_kind: "Node",
        ancestor_name: "node-storm",
        affected_count: 3,
        cluster: "kind-test",
        context: { node: "node-storm" },
      });
      expect((storm.member_fingerprints as string[]).length).toBe(3);
      expect(
        payloads
          .filter((payload) => payload.kind === "storm.member")
          .map((payload) => (payload.incident as { name: string }).name)
          .sort(),
      ).toEqual(["worker-4", "worker-5"]);
    } finally {
      await running.stop();
    }
  }, 45_000);

  test("a Deployment's crash-looping pod: the bundle names the Deployment, its ReplicaSet taken from the graph (D440)", async () => {
    const deployment = triage.api.scenario.createDeployment({ namespace: "payments", name: "ledger", replicas: 1 });
    const replicaSet = triage.api.scenario.createReplicaSet({
      namespace: "payments",
      name: "ledger-5d8",
      labels: { app: "ledger" },
      owner: { kind: "Deployment", name: "ledger", uid: String((deployment.metadata as { uid: string }).uid) },
    });
    const { running, log } = await watcher("--storm=on");
    try {
      triage.api.clearRequests();
      const pod = triage.api.scenario.createPod({
        namespace: "payments",
        name: "ledger-5d8-q",
        node: "node-l",
        labels: { app: "ledger" },
        owner: { kind: "ReplicaSet", name: "ledger-5d8", uid: String((replicaSet.metadata as { uid: string }).uid) },
        containers: [{ name: "app", waitingReason: "CrashLoopBackOff", restartCount: 3 }],
      });
      triage.api.scenario.recordEvent({
        involvedObject: pod,
        reason: "BackOff",
        message: "Back-off restarting failed container app in pod",
        type: "Warning",
        source: { component: "kubelet", host: "node-l" },
      });
      const fired = await waitFor(
        () => log.find((line) => line.includes("fire BackOff pod=payments/ledger-5d8-q")),
        8000,
        "fire line",
      );
      const [payload] = await injected(/sid=(\S+)/.exec(fired)?.[1] ?? "", 1);
      const bundle = String((payload?.enrichment as { bundle?: string } | undefined)?.bundle ?? "");
      expect(bundle.split("\n")[0]).toStartWith(
        "kind=bundle.target severity=info namespace=payments kind_of_object=Pod name=ledger-5d8-q workload=Deployment/payments/ledger pods=1 sections=spec,delta,radius",
      );
      expect(bundle).toContain("kind_of_object=Deployment name=ledger section=radius pods=1 ready=0 namespaces=1\n");
      const paths = triage.api.requests().map((request) => request.path);
      expect(paths).toContain("/apis/apps/v1/namespaces/payments/deployments/ledger");
      expect(paths).not.toContain("/apis/apps/v1/namespaces/payments/replicasets/ledger-5d8");
    } finally {
      await running.stop();
    }
  }, 30_000);

  test("--storm=on without the grants is refused at startup", async () => {
    triage.api.scenario.setGrants([{ verbs: ["list", "watch", "get"], resources: ["events", "pods"] }]);
    try {
      const config = watcherConfigFromArgv([
        `--daemon-url=${triage.daemon.baseUrl}`,
        "--token-env=WATCHER_TOKEN",
        `--kubeconfig=${triage.kubeconfig}`,
        "--storm=on",
      ]);
      if (!config.ok) throw new Error(config.error);
      const started = startWatcher(
        config.value,
        createLogger("error", () => {}),
        { env },
      );
      await expect(started).rejects.toThrow(StartupRefusal);
      await expect(started).rejects.toThrow('--storm=on requires permission to "list nodes cluster-wide"');
    } finally {
      triage.api.scenario.setGrants(undefined);
    }
  });
});
