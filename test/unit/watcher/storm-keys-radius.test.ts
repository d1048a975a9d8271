/**
 * The storm keys beyond the topology and the storm's radius bundle: the registry host of a
 * retryable pull is an external key tried first (D429); the cluster fallback groups lone node
 * failures under `Cluster/<name>` at a fifth of the fleet within 20 s and closes after 5 idle
 * minutes (D430); a formed storm's bundle is radius-only, headed by its ancestor and reach (D431).
 */
import { describe, expect, test } from "bun:test";
import { sha256Hex } from "../../../src/surfaces/http/caller-auth.ts";
import { type Ancestor, StormCorrelator, type StormMember } from "../../../src/watcher/core/storm.ts";
import {
  FALLBACK_IDLE_CLOSE_MS,
  externalKeys,
  fallbackKey,
  fallbackThreshold,
} from "../../../src/watcher/core/storm-keys.ts";
import { buildStormPayload } from "../../../src/watcher/core/storm-payloads.ts";
import { radiusCommand, stormRadiusBundle } from "../../../src/watcher/core/storm-radius.ts";

const node = (name: string): Ancestor => ({ kind: "Node", namespace: "", name });
const owner = (ns: string, name: string): Ancestor => ({ kind: "ReplicaSet", namespace: ns, name });
const pull = (image: string) => ({ message: `Failed to pull image "${image}": 503 Service Unavailable` });

function member(index: number, kindOfObject = "Pod", namespace = `ns-${index % 2}`): StormMember {
  return {
    key: `uid-${index}|ImagePullBackOff`,
    fingerprint: `sha256:${index}`,
    reason: kindOfObject === "Node" ? "NodeNotReady" : "Failed",
    canonicalReason: kindOfObject === "Node" ? "NodeNotReady" : "ImagePullBackOff",
    namespace: kindOfObject === "Node" ? "" : namespace,
    kindOfObject,
    name: kindOfObject === "Node" ? `node-${index}` : `pod-${index}`,
    uid: `uid-${index}`,
    severity: "critical",
    firstSeen: index * 1000,
    lastSeen: index * 1000,
    zone: "",
  };
}

describe("the registry-host key (D429)", () => {
  test("only a retryable pull carries it; the host is the first segment when it looks like one, else docker.io", () => {
    expect(externalKeys(pull("registry.example.com/shop/web:v1"), "retryable")).toEqual([
      { kind: "Registry", namespace: "", name: "registry.example.com", source: "registry-host" },
    ]);
    expect(externalKeys(pull("localhost:5000/web:v1"), "retryable")[0]?.name).toBe("localhost:5000");
    expect(externalKeys(pull("library/nginx:1"), "retryable")[0]?.name).toBe("docker.io");
    expect(externalKeys(pull("registry.example.com/web:v1"), "terminal")).toEqual([]);
    expect(externalKeys(pull("registry.example.com/web:v1"), "unknown")).toEqual([]);
    expect(externalKeys({ message: "Back-off restarting failed container" }, "retryable")).toEqual([]);
  });

  test("pods on different nodes and owners pulling from one registry form one storm keyed by the host", () => {
    const storms = new StormCorrelator({ min: 3, windowMs: 60_000, mineMin: 0 });
    const external = externalKeys(pull("registry.example.com/shop/web:v1"), "retryable");
    const observe = (i: number) =>
      storms.observe(member(i), [node(`n${i}`), owner(`ns-${i % 2}`, `rs-${i}`)], [], i * 1000, { external });
    expect(observe(1).outcome).toBe("none");
    expect(observe(2).outcome).toBe("none");
    const formed = observe(3);
    if (formed.outcome !== "formed") throw new Error(`not formed: ${formed.outcome}`);
    expect(formed.storm.id).toBe("Registry//registry.example.com");
    const payload = buildStormPayload(formed.storm, "prod", sha256Hex);
    expect(payload).toMatchObject({
      ancestor_kind: "Registry",
      ancestor_name: "registry.example.com",
      key_source: "registry-host",
      affected_count: 3,
      context: {},
    });
    expect(payload.message).toStartWith("Registry registry.example.com: 3 incidents across 2 namespace(s)");
    expect(observe(4).outcome).toBe("attached");
  });

  test("the external key wins over a topology key that reaches the minimum at the same time", () => {
    const storms = new StormCorrelator({ min: 2, windowMs: 60_000, mineMin: 0 });
    const external = externalKeys(pull("r.io/a:1"), "retryable");
    storms.observe(member(1), [node("n")], [], 0, { external });
    const formed = storms.observe(member(2), [node("n")], [], 1, { external });
    expect(formed.outcome === "formed" && formed.storm.id).toBe("Registry//r.io");
  });
});

describe("the cluster fallback (D430)", () => {
  test("a Node incident whose only key is itself gets the Cluster key; anything else does not", () => {
    const nodeSignal = { kindOfObject: "Node", name: "n1" };
    expect(fallbackKey(nodeSignal, [node("n1")], "prod", 3, 10)).toEqual({
      ancestor: { kind: "Cluster", namespace: "", name: "prod", source: "simultaneity" },
      threshold: 3,
      windowMs: 20_000,
      idleCloseMs: FALLBACK_IDLE_CLOSE_MS,
    });
    expect(fallbackKey(nodeSignal, [], "", 3, 0)?.ancestor.name).toBe("unnamed");
    expect(fallbackKey(nodeSignal, [node("n1"), { kind: "Zone", namespace: "", name: "a" }], "p", 3, 0)).toBe(
      undefined,
    );
    expect(fallbackKey({ kindOfObject: "Pod", name: "p" }, [node("n1")], "prod", 3, 10)).toBeUndefined();
  });

  test("the threshold is the largest of --storm-min, 3 and a fifth of the fleet", () => {
    expect(fallbackThreshold(2, 0)).toBe(3);
    expect(fallbackThreshold(4, 10)).toBe(4);
    expect(fallbackThreshold(3, 100)).toBe(20);
    expect(fallbackThreshold(3, 11)).toBe(3);
    expect(fallbackThreshold(3, 16)).toBe(4);
  });

  const nodeIncident = (storms: StormCorrelator, index: number, at: number, fleet = 10) => {
    const declared = [node(`node-${index}`)];
    const fallback = fallbackKey({ kindOfObject: "Node", name: `node-${index}` }, declared, "prod", 3, fleet);
    return storms.observe(member(index, "Node"), declared, [], at, fallback ? { fallback } : {});
  };

  test("three lone node failures within 20 s form one Cluster storm; spread over more than 20 s they do not", () => {
    const storms = new StormCorrelator({ min: 3, windowMs: 60_000, mineMin: 0 });
    nodeIncident(storms, 1, 0);
    nodeIncident(storms, 2, 5_000);
    const formed = nodeIncident(storms, 3, 19_000);
    if (formed.outcome !== "formed") throw new Error(`not formed: ${formed.outcome}`);
    expect(formed.storm.id).toBe("Cluster//prod");
    expect(buildStormPayload(formed.storm, "prod", sha256Hex)).toMatchObject({
      ancestor_kind: "Cluster",
      ancestor_name: "prod",
      key_source: "simultaneity",
      affected_count: 3,
    });
    const spread = new StormCorrelator({ min: 3, windowMs: 60_000, mineMin: 0 });
    nodeIncident(spread, 1, 0);
    nodeIncident(spread, 2, 15_000);
    expect(nodeIncident(spread, 3, 30_000).outcome).toBe("none");
    expect(nodeIncident(spread, 4, 31_000).outcome).toBe("formed");
  });

  test("a fifth of a large fleet is needed; the storm closes after 5 idle minutes, not 30", () => {
    const storms = new StormCorrelator({ min: 3, windowMs: 60_000, mineMin: 0 });
    for (let i = 1; i <= 19; i++) expect(nodeIncident(storms, i, i * 100, 100).outcome).toBe("none");
    const formed = nodeIncident(storms, 20, 2_000, 100);
    if (formed.outcome !== "formed") throw new Error("not formed");
    expect(nodeIncident(storms, 21, 3_000, 100).outcome).toBe("attached");
    nodeIncident(storms, 99, 3_000 + FALLBACK_IDLE_CLOSE_MS + 1, 100);
    expect(storms.get("Cluster//prod")).toBeUndefined();
  });
});

describe("the storm radius bundle (D431)", () => {
  function registryStorm(members: number) {
    const storms = new StormCorrelator({ min: 2, windowMs: 60_000, mineMin: 0 });
    const external = externalKeys(pull("registry.example.com/web:v1"), "retryable");
    let last = storms.observe(member(1), [], [], 0, { external });
    for (let i = 2; i <= members; i++) last = storms.observe(member(i), [], [], i, { external });
    const storm = storms.get("Registry//registry.example.com");
    if (!storm || last.outcome === "none") throw new Error("no storm");
    return storm;
  }

  test("the head line names the ancestor and its reach; radius lists namespaces then the first members", () => {
    const lines = stormRadiusBundle(registryStorm(3), 4096).split("\n");
    expect(lines[0]).toBe(
      'kind=bundle.target severity=info kind_of_object=Registry name=registry.example.com ancestor="Registry registry.example.com" affected=3 affected_namespaces=2 sections=radius',
    );
    expect(lines[1]).toBe(
      "kind=radius.namespace severity=info namespace=ns-1 section=radius affected=2 reasons=Failed",
    );
    expect(lines[2]).toBe(
      "kind=radius.namespace severity=info namespace=ns-0 section=radius affected=1 reasons=Failed",
    );
    expect(lines[3]).toBe(
      "kind=radius.member severity=critical namespace=ns-1 kind_of_object=Pod name=pod-1 reason=Failed section=radius",
    );
    expect(lines.filter((line) => line.startsWith("kind=radius.member"))).toHaveLength(3);
  });

  test("at most ten member lines; a radius over the cap is dropped whole with the ancestor's command", () => {
    const storm = registryStorm(25);
    const full = stormRadiusBundle(storm, 8192);
    expect(full.split("\n").filter((line) => line.startsWith("kind=radius.member"))).toHaveLength(10);
    expect(full).toContain("affected=25 affected_namespaces=2 sections=radius\n");
    const capped = stormRadiusBundle(storm, 300);
    expect(capped.split("\n")[0]).not.toContain("sections=");
    expect(capped).toContain('overflow section=radius cmd="kubectl get events -A --field-selector reason=Failed"\n');
  });

  test("each ancestor kind names the command that shows it", () => {
    expect(radiusCommand(node("gke-a"))).toBe("kubectl describe node gke-a");
    expect(radiusCommand({ kind: "Namespace", namespace: "", name: "shop" })).toBe(
      "kubectl get events -n shop --field-selector type=Warning",
    );
    expect(radiusCommand({ kind: "Deployment", namespace: "shop", name: "web" })).toBe(
      "kubectl describe deployment -n shop web",
    );
    expect(radiusCommand({ kind: "Cluster", namespace: "", name: "prod" })).toBe("kubectl get nodes -o wide");
  });
});
