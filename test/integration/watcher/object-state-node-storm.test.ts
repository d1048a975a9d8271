/**
 * A node failure end to end (issue 31, D377): the fake apiserver, a real `spar agent`, the watcher
 * with object-state and storms on. A node with 30 pods goes NotReady: object-state's
 * node_notready and the pods' NodeNotReady events form one storm on the node (one storm session,
 * not 30), and when the node is Ready again (its pods with it) for the stable window, the node's
 * incident gets `resolved` in the storm's session, judged by the graph's node clearance, and the
 * storm resolves with its last member.
 */
import { expect, test } from "bun:test";
import { waitFor } from "../../support/daemon.ts";
import { ONCALL_TOKEN, injectedPayloads, startTriageWatcher, triageScope } from "../../support/triage-daemon.ts";

const triage = triageScope();
const NODE = "node-storm-30";
const PODS = 30;

async function ownerSessions(): Promise<string[]> {
  const listed = (await (
    await fetch(`${triage.daemon.baseUrl}/sessions`, { headers: { authorization: `Bearer ${ONCALL_TOKEN}` } })
  ).json()) as { sessions: Array<{ sessionID: string }> };
  return listed.sessions.map((session) => session.sessionID).filter((id) => id.startsWith("sess-"));
}

const podName = (index: number) => `cart-${index}`;

/** Every pod on the node Ready or not (apply keeps the stored pod's uid). */
function setPods(ready: boolean) {
  for (let index = 0; index < PODS; index++) triage.api.scenario.apply(podObject(index, ready));
}

function podObject(index: number, ready: boolean) {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: podName(index), namespace: `shop-${index % 3}`, labels: { app: "cart" } },
    spec: { nodeName: NODE, containers: [{ name: "app", image: "registry.example.com/cart:v1" }] },
    status: {
      phase: "Running",
      conditions: [{ type: "Ready", status: ready ? "True" : "False", lastTransitionTime: new Date().toISOString() }],
      containerStatuses: [{ name: "app", ready, restartCount: 0, state: { running: {} } }],
    },
  };
}

test("a node failure with 30 pods gives one storm, not 30 sessions; the node Ready again for the stable window: resolved", async () => {
  triage.api.scenario.createNode({ name: NODE });
  setPods(true);
  const { running, log } = await startTriageWatcher(
    triage.daemon,
    triage.kubeconfig,
    ["--sources=cluster-events,object-state", "--storm=on", "--storm-min=3", "--recovery-stable-for=1s"],
    { recoveryTickMs: 100 },
  );
  try {
    const before = await ownerSessions();
    const node = triage.api.scenario.updateNode({ name: NODE, ready: "Unknown" });
    const nodeKey = `${(node.metadata as { uid: string }).uid}|NodeNotReady`;
    setPods(false);
    for (let index = 0; index < PODS; index++)
      triage.api.scenario.recordEvent({
        involvedObject: triage.api.scenario.get({
          apiVersion: "v1",
          kind: "Pod",
          namespace: `shop-${index % 3}`,
          name: podName(index),
        }) as Record<string, unknown>,
        reason: "NodeNotReady",
        message: "Node is not ready",
        type: "Warning",
        source: { component: "node-controller" },
      });
    const formed = await waitFor(
      () => log.find((line) => line.includes(`storm formed on Node ${NODE}`)),
      15_000,
      "the storm",
    );
    const stormSid = /sid=(\S+)/.exec(formed)?.[1] ?? "";
    await waitFor(() => (running.dispatcher.dedup.size >= PODS + 1 ? true : undefined), 15_000, "every incident");
    await running.dispatcher.idle();
    expect(log.filter((line) => line.includes("storm formed"))).toHaveLength(1);
    // object-state's node_notready is one of the storm's members (the dedup entry rebound to it).
    expect(running.dispatcher.dedup.get(nodeKey)?.storm).toBeDefined();
    // Incidents opened before the storm formed (fewer than --storm-min) plus the storm's own session.
    const opened = (await ownerSessions()).filter((id) => !before.includes(id));
    expect(opened).toContain(stormSid);
    expect(opened.length).toBeLessThanOrEqual(3);
    // The node recovers, its pods with it; after the stable window the node's incident is resolved into the storm session.
    triage.api.scenario.updateNode({ name: NODE, ready: "True" });
    setPods(true);
    await waitFor(
      () => log.find((line) => line.includes(`resolved NodeNotReady pod=/${NODE} → sid=${stormSid}`)),
      15_000,
      "the node's resolved",
    );
    await waitFor(
      () => (/watcher_storms_resolved_total\{[^}]*\} 1/.test(running.metrics.render()) ? true : undefined),
      15_000,
      "the storm resolved",
    );
    const payloads = await injectedPayloads(triage.daemon, stormSid, PODS + 3);
    const nodeResolved = payloads.find(
      (payload) => payload.kind === "resolved" && payload.kind_of_object === "Node" && payload.name === NODE,
    );
    expect(nodeResolved).toMatchObject({ kind: "resolved", reason: "NodeNotReady", resolution: "recovered" });
    expect(payloads.filter((payload) => payload.kind === "storm")).toHaveLength(1);
  } finally {
    await running.stop();
  }
}, 60_000);
