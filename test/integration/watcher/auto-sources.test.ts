/**
 * `--sources=auto`, the default, on a cluster that serves none of the optional APIs (no Gateway
 * API, no cert-manager, no metrics-server, no ComputeClass CRD), taken away through the fake
 * apiserver's own HTTP control route: the watcher starts, says in one line each why a source is
 * off or runs without a part, and is ready with every other source in its worker. With the APIs
 * served again, the next start enables them.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { startWatcher } from "../../../src/watcher/watch-runner.ts";
import { tempDir, waitFor } from "../../support/daemon.ts";
import { writeKubeconfig } from "../../support/kube.ts";

const OPTIONAL_APIS = [
  "gateway.networking.k8s.io/v1",
  "cert-manager.io/v1",
  "metrics.k8s.io/v1beta1",
  "cloud.google.com/v1",
];

let api: FakeApiserver;
let kubeconfig: string;

beforeAll(async () => {
  api = await startFakeApiserver({});
  kubeconfig = writeKubeconfig(join(tempDir(), "kubeconfig"), { server: api.url });
});
afterAll(() => api.stop());

async function serve(groupVersion: string, served: boolean): Promise<Response> {
  return fetch(`${api.url}/_fake/apis`, { method: "POST", body: JSON.stringify({ groupVersion, served }) });
}

async function startAuto(log: string[]) {
  const config = watcherConfigFromArgv(["--dry-run", `--kubeconfig=${kubeconfig}`, "--cluster-name=kind-test"]);
  if (!config.ok) throw new Error(config.error);
  return startWatcher(
    config.value,
    createLogger("info", (line) => log.push(line)),
    { stdout: () => {} },
  );
}

test("the control route takes an API away and serves it again; a malformed body is refused", async () => {
  expect((await serve("gateway.networking.k8s.io/v1", false)).status).toBe(200);
  expect((await fetch(`${api.url}/apis/gateway.networking.k8s.io/v1`)).status).toBe(404);
  expect((await serve("gateway.networking.k8s.io/v1", true)).status).toBe(200);
  expect((await fetch(`${api.url}/apis/gateway.networking.k8s.io/v1`)).status).toBe(200);
  const bad = await fetch(`${api.url}/_fake/apis`, { method: "POST", body: JSON.stringify({ served: "no" }) });
  expect(bad.status).toBe(400);
});

test("auto without the Gateway API, cert-manager, the metrics API or ComputeClasses: starts, says why, is ready", async () => {
  for (const groupVersion of OPTIONAL_APIS) expect((await serve(groupVersion, false)).status).toBe(200);
  const log: string[] = [];
  const running = await startAuto(log);
  try {
    const lines = log.map((line) => line.replace(/^\S+ \S+\s+/, "").trim());
    expect(lines).toContain(
      "source gateway: disabled (gateway.networking.k8s.io/v1 unavailable — install the Gateway API CRDs)",
    );
    expect(lines).toContain(
      "source saturation: disabled (metrics.k8s.io/v1beta1 unavailable — install metrics-server)",
    );
    expect(lines).toContain("source expiry: enabled (cert-manager.io/v1 certificates not served: not read)");
    expect(lines).toContain("source compute-class: enabled (cloud.google.com/v1 computeclasses not served: not read)");
    const resolved = (lines.find((line) => line.startsWith("sources: auto resolved → ")) ?? "").split(" ")[4] ?? "";
    expect(resolved.split(",")).toEqual([
      "cluster-events",
      "object-state",
      "rollout",
      "workload",
      "autoscaling",
      "degradation",
      "expiry",
      "capacity",
      "ingress",
      "topology-drift",
      "compute-class",
    ]);
    await waitFor(() => (running.ready() ? true : undefined), 15_000, "ready");
    expect(running.sources().map((source) => `${source.name}: ${source.state}`)).toEqual(
      resolved.split(",").map((name) => `${name}: ready`),
    );
  } finally {
    await running.stop();
  }
  for (const groupVersion of OPTIONAL_APIS) await serve(groupVersion, true);
  const again: string[] = [];
  const restarted = await startAuto(again);
  try {
    const resolved = again.find((line) => line.includes("sources: auto resolved → ")) ?? "";
    expect(resolved).toContain(",saturation,");
    expect(resolved).toContain(",gateway,");
  } finally {
    await restarted.stop();
  }
});
