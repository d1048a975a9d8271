/**
 * The watcher's own kubeconfig reader (D140): contexts and current-context, data and file
 * credentials with paths relative to the kubeconfig, tokens (static, tokenFile, auth-provider
 * tokenFile re-read per call), KUBECONFIG lists merged first-wins, the in-cluster service account.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadKubeConnection } from "../../../src/watcher/kube/kube-connection.ts";
import { inClusterKubeconfig, readKubeconfig } from "../../../src/watcher/kube/kubeconfig-file.ts";
import { tempDir } from "../../support/daemon.ts";

const saved = {
  KUBECONFIG: process.env.KUBECONFIG,
  HOST: process.env.KUBERNETES_SERVICE_HOST,
  PORT: process.env.KUBERNETES_SERVICE_PORT,
};
afterEach(() => {
  for (const [key, value] of [
    ["KUBECONFIG", saved.KUBECONFIG],
    ["KUBERNETES_SERVICE_HOST", saved.HOST],
    ["KUBERNETES_SERVICE_PORT", saved.PORT],
  ] as const) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
});

const YAML_A = `apiVersion: v1
kind: Config
current-context: a
clusters:
- name: a
  cluster:
    server: https://a.example:6443/
    certificate-authority: pki/ca.crt
- name: b
  cluster:
    server: http://b.example:8080
    insecure-skip-tls-verify: true
users:
- name: a
  user:
    client-certificate-data: ${Buffer.from("CERT").toString("base64")}
    client-key: pki/client.key
- name: b
  user:
    auth-provider:
      name: tokenFile
      config:
        tokenFile: token
contexts:
- name: a
  context: {cluster: a, user: a}
- name: b
  context: {cluster: b, user: b}
`;

describe("kubeconfig reader", () => {
  test("the current context with relative files and data; another context by name with an auth-provider token file", () => {
    const dir = tempDir();
    mkdirSync(join(dir, "pki"));
    writeFileSync(join(dir, "pki", "ca.crt"), "CA");
    writeFileSync(join(dir, "pki", "client.key"), "KEY");
    writeFileSync(join(dir, "token"), "tok-1\n");
    writeFileSync(join(dir, "config"), YAML_A);
    const a = loadKubeConnection({ inCluster: false, kubeconfig: join(dir, "config") });
    expect(a.server).toBe("https://a.example:6443");
    expect(a.tls).toEqual({ ca: "CA", cert: "CERT", key: "KEY" });
    expect(a.token()).toBeUndefined();
    const b = loadKubeConnection({ inCluster: false, kubeconfig: join(dir, "config"), context: "b" });
    expect([b.server, b.tls]).toEqual(["http://b.example:8080", { rejectUnauthorized: false }]);
    expect(b.token()).toBe("tok-1");
    writeFileSync(join(dir, "token"), "tok-2\n");
    expect(b.token()).toBe("tok-2");
    expect(() => loadKubeConnection({ inCluster: false, kubeconfig: join(dir, "config"), context: "nope" })).toThrow(
      'no context "nope"',
    );
  });

  test("KUBECONFIG lists merge first-wins; the in-cluster account", () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, "one"),
      `current-context: x\nclusters: [{name: x, cluster: {server: "https://one"}}]\nusers: [{name: x, user: {token: t1}}]\ncontexts: [{name: x, context: {cluster: x, user: x}}]\n`,
    );
    writeFileSync(
      join(dir, "two"),
      `current-context: y\nclusters: [{name: x, cluster: {server: "https://shadowed"}}, {name: y, cluster: {server: "https://two"}}]\nusers: [{name: y, user: {token: t2}}]\ncontexts: [{name: y, context: {cluster: y, user: y}}]\n`,
    );
    process.env.KUBECONFIG = `${join(dir, "missing")}:${join(dir, "one")}:${join(dir, "two")}`;
    const merged = readKubeconfig();
    expect(merged.currentContext).toBe("x");
    expect(merged.contexts.map((context) => context.name)).toEqual(["x", "y"]);
    expect(merged.clusters.find((cluster) => cluster.name === "x")?.server).toBe("https://one");
    expect(loadKubeConnection({ inCluster: false, kubeconfig: undefined, context: "y" }).token()).toBe("t2");
    process.env.KUBERNETES_SERVICE_HOST = "fd00::1";
    process.env.KUBERNETES_SERVICE_PORT = "443";
    expect(inClusterKubeconfig().clusters[0]).toEqual({
      name: "in-cluster",
      server: "https://[fd00::1]:443",
      caFile: "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
    });
  });
});
