/**
 * Storm keys beyond the topology, end to end: the fake apiserver, a real `spar agent`, the watcher.
 * Pods on different nodes, in different namespaces, failing to pull from one registry for a
 * retryable cause form one storm keyed by the registry host (D429), whose opening payload carries
 * the radius bundle (D431). Lone node failures form one `Cluster` storm under
 * --storm-cluster-fallback (D430); with it off each node opens its own session, whose bundle is the
 * node's (D432).
 */
import { describe, expect, test } from "bun:test";
import { waitFor } from "../../support/daemon.ts";
import { injectedPayloads, startTriageWatcher, triageScope } from "../../support/triage-daemon.ts";

const triage = triageScope();

function failingPull(index: number) {
  const pod = triage.api.scenario.createPod({
    namespace: `team-${index}`,
    name: `web-${index}`,
    node: `pull-node-${index}`,
    containers: [{ name: "app", image: "registry.example.com/web:v1", waitingReason: "ErrImagePull" }],
  } as never);
  triage.api.scenario.recordEvent({
    involvedObject: pod,
    reason: "ErrImagePull",
    message:
      'Failed to pull image "registry.example.com/web:v1": unexpected status from HEAD request: 503 Service Unavailable',
    type: "Warning",
    count: 3,
    source: { component: "kubelet", host: `pull-node-${index}` },
  });
}

function nodeDown(name: string) {
  const node = triage.api.scenario.updateNode({ name, ready: "False" });
  triage.api.scenario.recordEvent({
    involvedObject: node,
    reason: "NodeNotReady",
    message: `Node ${name} status is now: NodeNotReady`,
    type: "Warning",
    source: { component: "node-controller" },
  });
}

/** Each test's events gone and its nodes Ready again, so the next watcher replays none of them. */
function cleanUp(nodes: readonly string[]) {
  for (const event of triage.api.scenario.list("v1", "Event")) {
    const metadata = event.metadata as { namespace?: string; name: string };
    triage.api.scenario.delete({
      apiVersion: "v1",
      kind: "Event",
      namespace: metadata.namespace,
      name: metadata.name,
    } as never);
  }
  for (const name of nodes) triage.api.scenario.updateNode({ name, ready: "True" });
}

/** Only the cluster-events source: the keys under test need nothing else. */
const watch = (...extra: string[]) =>
  startTriageWatcher(triage.daemon, triage.kubeconfig, ["--sources=cluster-events", "--storm=on", ...extra]);

describe("storm keys", () => {
  test("pods of many namespaces and nodes failing to pull from one registry form one storm keyed by its host", async () => {
    const { running, log } = await watch();
    try {
      for (let index = 1; index <= 4; index++) failingPull(index);
      const formed = await waitFor(
        () => log.find((line) => line.includes("storm formed on Registry registry.example.com")),
        15_000,
        "the registry storm",
      );
      expect(formed).toContain("3 incidents across 3 namespace(s)");
      const sid = /sid=(\S+)/.exec(formed)?.[1] ?? "";
      await waitFor(() => (running.dispatcher.dedup.size >= 4 ? true : undefined), 15_000, "every incident");
      await running.dispatcher.idle();
      expect(log.filter((line) => line.includes("storm formed"))).toHaveLength(1);
      const payloads = await injectedPayloads(triage.daemon, sid, 2);
      const storm = payloads.find((payload) => payload.kind === "storm");
      expect(storm).toMatchObject({
        ancestor_kind: "Registry",
        ancestor_name: "registry.example.com",
        key_source: "registry-host",
        reason: "ImagePullBackOff",
        affected_count: 3,
      });
      const bundle = String((storm?.enrichment as { bundle?: string } | undefined)?.bundle ?? "");
      expect(bundle.split("\n")[0]).toBe(
        'kind=bundle.target severity=info kind_of_object=Registry name=registry.example.com ancestor="Registry registry.example.com" affected=3 affected_namespaces=3 sections=radius',
      );
      expect(bundle).toContain("kind=radius.member severity=critical namespace=team-1 kind_of_object=Pod name=web-1");
      // The fourth pod attaches to the storm rather than opening a session of its own.
      expect(payloads.find((payload) => payload.kind === "storm.member")).toMatchObject({
        incident: { name: "web-4", namespace: "team-4" },
      });
    } finally {
      await running.stop();
      cleanUp([]);
    }
  }, 60_000);

  test("--storm-cluster-fallback: three of ten nodes failing at once form one Cluster storm", async () => {
    for (let index = 0; index < 10; index++) triage.api.scenario.createNode({ name: `fleet-${index}` });
    const { running, log } = await watch();
    try {
      for (const index of [1, 2, 3]) nodeDown(`fleet-${index}`);
      const formed = await waitFor(
        () => log.find((line) => line.includes("storm formed on Cluster kind-test")),
        15_000,
        "the cluster storm",
      );
      expect(formed).toContain("3 incidents across 1 namespace(s)");
      const sid = /sid=(\S+)/.exec(formed)?.[1] ?? "";
      const [storm] = (await injectedPayloads(triage.daemon, sid, 1)).filter((payload) => payload.kind === "storm");
      expect(storm).toMatchObject({
        ancestor_kind: "Cluster",
        ancestor_name: "kind-test",
        key_source: "simultaneity",
        reason: "NodeNotReady",
      });
      expect(
        (storm?.representative_incidents as Array<{ name: string }>).map((incident) => incident.name).sort(),
      ).toEqual(["fleet-1", "fleet-2", "fleet-3"]);
    } finally {
      await running.stop();
      cleanUp(["fleet-1", "fleet-2", "fleet-3"]);
    }
  }, 60_000);

  test("with the fallback off, each node failure opens its own session carrying the node's bundle", async () => {
    for (let index = 0; index < 3; index++) triage.api.scenario.createNode({ name: `solo-${index}` });
    triage.api.scenario.createPod({ namespace: "shop", name: "on-solo", node: "solo-0" } as never);
    const { running, log } = await watch("--storm-cluster-fallback=false");
    try {
      for (let index = 0; index < 3; index++) nodeDown(`solo-${index}`);
      for (let index = 0; index < 3; index++)
        await waitFor(
          () => log.find((line) => line.includes(`fire NodeNotReady pod=/solo-${index}`)),
          20_000,
          `solo-${index}'s session`,
        );
      await running.dispatcher.idle();
      expect(log.some((line) => line.includes("storm formed on Cluster"))).toBe(false);
      const fired = log.find((line) => line.includes("fire NodeNotReady pod=/solo-0")) ?? "";
      const [payload] = await injectedPayloads(triage.daemon, /sid=(\S+)/.exec(fired)?.[1] ?? "", 1);
      const bundle = String((payload?.enrichment as { bundle?: string } | undefined)?.bundle ?? "");
      expect(bundle.split("\n")[0]).toBe(
        "kind=bundle.target severity=info kind_of_object=Node name=solo-0 workload=Node//solo-0 pods=1 sections=spec,delta,radius",
      );
      expect(bundle).toContain("kind=spec.condition severity=critical kind_of_object=Node name=solo-0");
    } finally {
      await running.stop();
    }
  }, 60_000);
});
