/**
 * Fidelity oracle: the real kubectl (client-go) against the fake apiserver through generated
 * kubeconfigs. kubectl must discover, get and --watch events (table and -o json output, with
 * --field-selector), see an event created after its watch started, read pod logs, answer
 * `auth can-i` from SelfSubjectAccessReviews, and connect over HTTPS with a token and over mTLS
 * with client certificates. (kubectl sends tokens only over TLS, so the token case is HTTPS.)
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { waitFor } from "../../support/daemon.ts";
import {
  type CertificateSet,
  generateCertificates,
  kubeTempDir,
  kubectl,
  spawnKubectl,
  writeKubeconfig,
} from "../../support/kube.ts";

let api: FakeApiserver;
let kubeconfig: string;
let dir: string;

beforeAll(async () => {
  dir = kubeTempDir("spar-kubectl-");
  api = await startFakeApiserver();
  kubeconfig = writeKubeconfig(join(dir, "plain.kubeconfig"), { server: api.url, insecureSkipTlsVerify: true });
  const crashy = api.scenario.createPod({
    namespace: "shop",
    name: "checkout-7b9d",
    node: "node-1",
    containers: [{ name: "server", waitingReason: "CrashLoopBackOff", restartCount: 7 }],
  });
  api.scenario.recordEvent({
    involvedObject: crashy,
    reason: "BackOff",
    message: "Back-off restarting failed container server",
    fieldPath: "spec.containers{server}",
    name: "checkout-7b9d.backoff",
  });
  api.scenario.recordEvent({
    involvedObject: crashy,
    reason: "Pulled",
    type: "Normal",
    message: "Container image pulled",
    name: "checkout-7b9d.pulled",
  });
  api.scenario.setPodLogs("shop", "checkout-7b9d", "server", {
    current: "starting\n",
    previous: "line 1\nline 2\npanic: boom\n",
  });
});
afterAll(async () => {
  await api.stop();
});

describe("kubectl get", () => {
  test("lists events across namespaces and in one namespace", async () => {
    const all = await kubectl(kubeconfig, ["get", "events", "-A"]);
    expect(all.stderr).toBe("");
    expect(all.exitCode).toBe(0);
    expect(all.stdout).toContain("checkout-7b9d.backoff");
    expect(all.stdout).toContain("checkout-7b9d.pulled");
    const one = await kubectl(kubeconfig, ["get", "events", "-n", "shop", "-o", "name"]);
    expect(one.stdout.trim().split("\n").sort()).toEqual(["event/checkout-7b9d.backoff", "event/checkout-7b9d.pulled"]);
  }, 20_000);

  test("-o json with --field-selector returns only the matching events, decoded by client-go", async () => {
    const result = await kubectl(kubeconfig, [
      "get",
      "events",
      "-A",
      "-o",
      "json",
      "--field-selector",
      "type=Warning,involvedObject.name=checkout-7b9d,reason!=Pulled",
    ]);
    expect(result.exitCode).toBe(0);
    const list = JSON.parse(result.stdout) as {
      kind: string;
      items: { reason: string; count: number; involvedObject: { fieldPath: string } }[];
    };
    expect(list.kind).toBe("List");
    expect(list.items.map((item) => item.reason)).toEqual(["BackOff"]);
    expect(list.items[0]?.involvedObject.fieldPath).toBe("spec.containers{server}");
  }, 20_000);

  test("an unsupported field selector is kubectl's error from the 400 Status", async () => {
    const result = await kubectl(kubeconfig, ["get", "events", "-A", "--field-selector", "spec.nothing=1"]);
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr).toContain("field label not supported: spec.nothing");
  }, 20_000);

  test("events.k8s.io/v1 events, pods, nodes and replicasets are gettable", async () => {
    api.scenario.createNode({ name: "node-1", ready: "False" });
    api.scenario.createReplicaSet({ namespace: "shop", name: "checkout-7b9d", replicas: 2 });
    const v1 = await kubectl(kubeconfig, [
      "get",
      "events.v1.events.k8s.io",
      "-n",
      "shop",
      "-o",
      "jsonpath={.items[*].note}",
    ]);
    expect(v1.exitCode).toBe(0);
    expect(v1.stdout).toContain("Back-off restarting failed container server");
    const pod = await kubectl(kubeconfig, [
      "get",
      "pod",
      "checkout-7b9d",
      "-n",
      "shop",
      "-o",
      "jsonpath={.status.containerStatuses[0].state.waiting.reason}",
    ]);
    expect(pod.stdout).toBe("CrashLoopBackOff");
    expect((await kubectl(kubeconfig, ["get", "nodes", "-o", "name"])).stdout.trim()).toBe("node/node-1");
    expect((await kubectl(kubeconfig, ["get", "rs", "-n", "shop", "-o", "name"])).stdout.trim()).toBe(
      "replicaset.apps/checkout-7b9d",
    );
    const missing = await kubectl(kubeconfig, ["get", "pod", "ghost", "-n", "shop"]);
    expect(missing.stderr).toContain('pods "ghost" not found');
  }, 30_000);

  test("logs with --previous and --tail", async () => {
    const previous = await kubectl(kubeconfig, ["logs", "-n", "shop", "checkout-7b9d", "--previous", "--tail=1"]);
    expect(previous.exitCode).toBe(0);
    expect(previous.stdout).toBe("panic: boom\n");
    expect((await kubectl(kubeconfig, ["logs", "-n", "shop", "checkout-7b9d"])).stdout).toBe("starting\n");
    // A crash-looping pod nobody set logs for: its previous instance exists and is empty.
    api.scenario.createPod({
      namespace: "shop",
      name: "quiet-1",
      containers: [{ name: "app", waitingReason: "CrashLoopBackOff", restartCount: 2 }],
    });
    const quiet = await kubectl(kubeconfig, ["logs", "-n", "shop", "quiet-1", "--previous", "--tail=20"]);
    expect([quiet.exitCode, quiet.stdout, quiet.stderr]).toEqual([0, "", ""]);
  }, 20_000);
});

describe("kubectl get --watch", () => {
  test("-o json sees an event created after the watch started, and its count bump", async () => {
    const watcher = spawnKubectl(kubeconfig, ["get", "events", "-A", "--watch", "-o", "json", "--request-timeout=0"]);
    try {
      await watcher.waitFor("checkout-7b9d.pulled");
      await waitForWatchRequest();
      const pod = api.scenario.createPod({ namespace: "late", name: "late-pod" });
      api.scenario.recordEvent({
        involvedObject: pod,
        reason: "FailedMount",
        message: "MountVolume.SetUp failed",
        name: "late-pod.mount",
      });
      await watcher.waitFor("late-pod.mount");
      api.scenario.patch({ apiVersion: "v1", kind: "Event", namespace: "late", name: "late-pod.mount" }, { count: 5 });
      await watcher.waitFor(/"count": 5/);
    } finally {
      await watcher.stop();
    }
  }, 30_000);

  test("--field-selector applies to the watch: only matching new events are printed", async () => {
    const watcher = spawnKubectl(kubeconfig, [
      "get",
      "events",
      "-n",
      "shop",
      "--watch",
      "--field-selector",
      "reason=OOMKilling",
      "--request-timeout=0",
    ]);
    try {
      await waitForWatchRequest("reason=OOMKilling");
      api.scenario.recordEvent({
        involvedObject: { kind: "Pod", name: "checkout-7b9d", namespace: "shop", uid: "u" },
        reason: "Unhealthy",
        message: "probe failed",
        name: "skipped.unhealthy",
      });
      api.scenario.recordEvent({
        involvedObject: { kind: "Pod", name: "checkout-7b9d", namespace: "shop", uid: "u" },
        reason: "OOMKilling",
        message: "Memory cgroup out of memory",
        name: "seen.oom",
      });
      await watcher.waitFor("seen.oom");
      expect(watcher.output()).not.toContain("skipped.unhealthy");
    } finally {
      await watcher.stop();
    }
  }, 30_000);
});

/** Resolves once kubectl's watch request (optionally with `selector` in it) has reached the fake. */
async function waitForWatchRequest(selector?: string): Promise<void> {
  const opened = () =>
    api
      .requests()
      .some(
        (entry) =>
          entry.query.watch === "true" &&
          (selector === undefined || (entry.query.fieldSelector ?? "").includes(selector)),
      );
  await waitFor(() => (opened() ? true : undefined), 8000, "kubectl's watch request");
}

describe("kubectl over TLS", () => {
  let certificates: CertificateSet;
  beforeAll(() => {
    certificates = generateCertificates(kubeTempDir("spar-kubectl-certs-"), { user: "watcher" });
  }, 20_000);

  test("HTTPS with a bearer token and the CA in the kubeconfig; a wrong token is refused", async () => {
    const secure = await startFakeApiserver({
      tls: { cert: certificates.serverCert, key: certificates.serverKey },
      tokens: { "good-token": "watcher" },
    });
    try {
      secure.scenario.recordEvent({
        involvedObject: { kind: "Node", name: "n1", uid: "n1" },
        reason: "NodeNotReady",
        message: "not ready",
        name: "n1.notready",
      });
      const good = writeKubeconfig(join(dir, "token.kubeconfig"), {
        server: secure.url,
        token: "good-token",
        caPem: certificates.caCert,
      });
      const result = await kubectl(good, ["get", "events", "-A", "-o", "name"]);
      expect(result.exitCode).toBe(0);
      expect(result.stdout.trim()).toBe("event/n1.notready");
      expect(secure.requests().some((entry) => entry.user === "watcher")).toBe(true);
      const bad = writeKubeconfig(join(dir, "bad.kubeconfig"), {
        server: secure.url,
        token: "bad-token",
        caPem: certificates.caCert,
      });
      const refused = await kubectl(bad, ["get", "events", "-A"]);
      expect(refused.exitCode).not.toBe(0);
      expect(refused.stderr).toContain("You must be logged in to the server");
    } finally {
      await secure.stop();
    }
  }, 30_000);

  test("mTLS with client certificates in the kubeconfig; auth can-i answers from the grant set", async () => {
    const mutual = await startFakeApiserver({
      tls: { cert: certificates.serverCert, key: certificates.serverKey, clientCa: certificates.caCert },
      clientCertificateUser: "watcher",
      grants: [
        { verbs: ["get", "list", "watch"], resources: ["events", "pods"] },
        { verbs: ["get", "list"], apiGroups: [""], resources: ["nodes"] },
      ],
    });
    try {
      mutual.scenario.createPod({ namespace: "shop", name: "m1" });
      const config = writeKubeconfig(join(dir, "mtls.kubeconfig"), {
        server: mutual.url,
        caPem: certificates.caCert,
        clientCertPem: certificates.clientCert,
        clientKeyPem: certificates.clientKey,
      });
      const pods = await kubectl(config, ["get", "pods", "-n", "shop", "-o", "name"]);
      expect(pods.exitCode).toBe(0);
      expect(pods.stdout.trim()).toBe("pod/m1");
      expect((await kubectl(config, ["auth", "can-i", "watch", "events"])).stdout.trim()).toBe("yes");
      expect((await kubectl(config, ["auth", "can-i", "delete", "pods"])).stdout.trim()).toBe("no");
      const forbidden = await kubectl(config, ["get", "deployments", "-A"]);
      expect(forbidden.stderr).toContain('User "watcher" cannot list resource "deployments" in API group "apps"');
      const noCertificate = writeKubeconfig(join(dir, "nocert.kubeconfig"), {
        server: mutual.url,
        caPem: certificates.caCert,
      });
      expect((await kubectl(noCertificate, ["get", "pods", "-A"], 10_000)).exitCode).not.toBe(0);
    } finally {
      await mutual.stop();
    }
  }, 40_000);
});
