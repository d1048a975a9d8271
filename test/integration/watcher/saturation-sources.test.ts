/**
 * The saturation source (D389-D392) against the fake apiserver: the fake serves metrics.k8s.io
 * PodMetrics and the kubelet stats summary through the node proxy (kubectl reads both); a
 * container's memory growing 10Mi a minute towards its 1Gi limit gives one warning once 8
 * samples span half the window and not before, and one critical when under 15m are left; a PVC
 * filling pages through the whole watcher. Its startup: `get nodes/proxy` denied is an `enabled,
 * degraded` line and no stats are read; a required grant denied disables it under auto with one
 * line and refuses startup when named; without metrics-server auto turns it off with one line.
 * Sample times are the metrics' own timestamps, set by the test, so no test waits for minutes.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { pod } from "../../../scripts/fake-apiserver/builders.ts";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import type { Signal } from "../../../src/watcher/core/signal.ts";
import type { SourceSpec } from "../../../src/watcher/core/source-spec.ts";
import {
  type NodeStats,
  SATURATION_DEFAULTS,
  SaturationDetector,
  type SaturationSettings,
} from "../../../src/watcher/core/sources/saturation-detector.ts";
import { SATURATION_SPEC } from "../../../src/watcher/core/sources/saturation-spec.ts";
import { SaturationRunner } from "../../../src/watcher/sources/saturation-runner.ts";
import { StartupRefusal, startWatcher } from "../../../src/watcher/watch-runner.ts";
import { waitFor } from "../../support/daemon.ts";
import { kubeTempDir, kubectl, writeKubeconfig } from "../../support/kube.ts";

const MIN = 60_000;
const MI = 2 ** 20;
let api: FakeApiserver;
let apiUid = "";
const connection = () => ({ server: api.url, tls: {}, token: () => undefined });

/** A pod whose `app` container has these limits. */
function limitedPod(namespace: string, name: string, limits: Record<string, string>) {
  const built = pod({ namespace, name, node: "node-1" });
  const spec = built.spec as { containers: Record<string, unknown>[] };
  spec.containers = spec.containers.map((container) => ({ ...container, resources: { limits } }));
  return built;
}

beforeAll(async () => {
  api = await startFakeApiserver();
  api.scenario.createNode({ name: "node-1" });
  api.scenario.create(limitedPod("prod", "web-1", { memory: "1Gi" }));
  const created = api.scenario.create(limitedPod("prod", "api-1", { memory: "1Gi" }));
  apiUid = String((created.metadata as { uid: string }).uid);
  api.scenario.create(limitedPod("prod", "db-0", { cpu: "2" }));
  api.scenario.create(limitedPod("stage", "web-1", { memory: "1Gi" }));
});
afterAll(() => api.stop());

describe("the fake's metrics API and kubelet stats", () => {
  test("PodMetrics listed, per namespace and by name (never watched); the stats summary through nodes/proxy; kubectl reads both", async () => {
    api.scenario.setContainerUsage({ namespace: "prod", pod: "web-1", container: "app", memory: "300Mi", cpu: "20m" });
    api.scenario.setContainerUsage({ namespace: "stage", pod: "web-1", container: "app", memory: "100Mi" });
    api.scenario.setVolumeUsage({
      node: "node-1",
      namespace: "prod",
      claim: "data",
      pod: "db-0",
      usedBytes: 400 * MI,
      capacityBytes: 1024 * MI,
    });
    const get = (path: string) => fetch(`${api.url}${path}`);
    const group = (await (await get("/apis/metrics.k8s.io/v1beta1")).json()) as { resources: { name: string }[] };
    expect(group.resources.map((resource) => resource.name)).toEqual(["pods"]);
    const all = (await (await get("/apis/metrics.k8s.io/v1beta1/pods")).json()) as { items: unknown[]; kind: string };
    expect(all.kind).toBe("PodMetricsList");
    expect(all.items).toHaveLength(2);
    const prod = (await (await get("/apis/metrics.k8s.io/v1beta1/namespaces/prod/pods")).json()) as {
      items: { containers: unknown[] }[];
    };
    expect(prod.items.map((item) => item.containers)).toEqual([
      [{ name: "app", usage: { cpu: "20m", memory: "300Mi" } }],
    ]);
    expect((await get("/apis/metrics.k8s.io/v1beta1/namespaces/prod/pods/web-1")).status).toBe(200);
    expect((await get("/apis/metrics.k8s.io/v1beta1/pods?watch=true")).status).toBe(405);
    const summary = (await (await get("/api/v1/nodes/node-1/proxy/stats/summary")).json()) as {
      pods: { podRef: { name: string; uid: string }; volume: Record<string, unknown>[] }[];
    };
    expect(summary.pods[0]?.podRef.name).toBe("db-0");
    expect(summary.pods[0]?.podRef.uid).not.toBe("");
    expect(summary.pods[0]?.volume[0]).toMatchObject({
      usedBytes: 400 * MI,
      capacityBytes: 1024 * MI,
      availableBytes: 624 * MI,
      pvcRef: { name: "data", namespace: "prod" },
    });
    expect((await get("/api/v1/nodes/nope/proxy/stats/summary")).status).toBe(404);
    expect((await get("/api/v1/nodes/node-1/proxy/metrics")).status).toBe(404);
    const kubeconfig = writeKubeconfig(join(kubeTempDir("spar-saturation-"), "kubeconfig"), { server: api.url });
    const top = await kubectl(kubeconfig, ["top", "pod", "-n", "prod", "--no-headers"]);
    expect(top.stdout.trim().split(/\s+/)).toEqual(["web-1", "20m", "300Mi"]);
    const raw = await kubectl(kubeconfig, ["get", "--raw", "/api/v1/nodes/node-1/proxy/stats/summary"]);
    expect(raw.stdout).toContain('"pvcRef":{"name":"data","namespace":"prod"}');
    api.scenario.setGrants([{ verbs: ["get", "list"], resources: ["nodes", "pods"] }]);
    try {
      const denied = await get("/api/v1/nodes/node-1/proxy/stats/summary");
      expect(denied.status).toBe(403);
      expect(((await denied.json()) as { message: string }).message).toContain('cannot get resource "nodes/proxy"');
    } finally {
      api.scenario.setGrants(undefined);
    }
  });
});

/** The real detector, with what it was told noted (the barrier for "not before"). */
function observedSpec(seen: Set<string>): SourceSpec<SaturationSettings> {
  return {
    ...SATURATION_SPEC,
    detector: (settings) => {
      const inner = new SaturationDetector(settings);
      return {
        observe: () => [],
        polled: (poll, body, now, error) => {
          const signals = inner.polled(poll, body, now, error);
          const items = ((body as { items?: Record<string, unknown>[] } | undefined)?.items ?? []) as {
            metadata?: { name?: string; namespace?: string };
            timestamp?: string;
          }[];
          if (poll === "pods")
            for (const item of items) seen.add(`pod ${item.metadata?.namespace}/${item.metadata?.name}`);
          if (poll === "pod-metrics") for (const item of items) seen.add(`metrics ${item.timestamp}`);
          for (const node of (body as { nodes?: NodeStats[] } | undefined)?.nodes ?? [])
            seen.add(`stats ${JSON.stringify(node.summary)}`);
          return signals;
        },
      };
    },
  };
}

describe("saturation runner", () => {
  test("memory growing 10Mi/min towards 1Gi: one warning at its threshold and not before, one critical under 15m", async () => {
    const seen = new Set<string>();
    const emitted: Signal[] = [];
    const settings = { ...SATURATION_DEFAULTS, intervalMs: 30, windowMs: 20 * MIN };
    const runner = new SaturationRunner(
      {
        values: new Map(),
        env: {},
        connection: connection(),
        without: new Set(),
        emit: (signal) => emitted.push(signal),
        logger: createLogger("error"),
        onRestart: () => {},
      },
      settings,
      observedSpec(seen),
    );
    // Sample times from 5m ago on (a series with no sample for a whole window is dropped).
    const base = Math.floor(Date.now() / 1000) * 1000 - 5 * MIN;
    await runner.start();
    try {
      await waitFor(() => (seen.has("pod prod/api-1") ? true : undefined), 5000, "the pods list");
      const warnedAt: number[] = [];
      for (let i = 0; i <= 50; i++) {
        const timestamp = new Date(base + i * MIN).toISOString();
        api.scenario.setContainerUsage({
          namespace: "prod",
          pod: "api-1",
          container: "app",
          memory: `${400 + 10 * i}Mi`,
          timestamp,
        });
        await waitFor(() => (seen.has(`metrics ${timestamp}`) ? true : undefined), 5000, `sample ${i}`);
        // The detector has judged sample i: what it sent so far is all it sent for it.
        if (emitted.length > warnedAt.length) warnedAt.push(i);
      }
      // 11 samples over 10m (half the window) at i=10: 52m left; under 15m from i=48.
      expect(warnedAt).toEqual([10, 48]);
      expect(emitted.map((signal) => [signal.severity, signal.reason, signal.uid])).toEqual([
        ["warning", "forecast_memory", `${apiUid}/app`],
        ["critical", "forecast_memory", `${apiUid}/app`],
      ]);
      expect(emitted[0]?.message).toContain("memory of container app in pod prod/api-1: 500.0MiB of its 1.0GiB limit");
      expect(emitted[0]).toMatchObject({ kindOfObject: "Pod", container: "app", node: "node-1" });
    } finally {
      await runner.stop();
    }
  });
});

async function watcher(args: string[], lines: string[], printed: string[] = []) {
  const parsed = watcherConfigFromArgv([
    "--dry-run",
    "--kubeconfig=/nonexistent",
    "--cluster-name=saturation-test",
    "--storm=off",
    "--recovery-stable-for=0",
    // Warnings go to the watchboard (D418): a digest per warning, printed at once.
    "--watchboard-batch=1",
    "--access-recheck=0",
    "--saturation-interval=30ms",
    "--saturation-window=20m",
    ...args,
  ]);
  if (!parsed.ok) throw new Error(parsed.error);
  return startWatcher(
    parsed.value,
    createLogger("info", (line) => lines.push(line)),
    { connection: connection(), stdout: (text) => printed.push(text), env: {} },
  );
}

const proxyDenied = [
  {
    verbs: ["get", "list", "watch", "create"],
    apiGroups: ["", "authorization.k8s.io", "metrics.k8s.io"],
    resources: ["events", "pods", "nodes", "selfsubjectaccessreviews"],
  },
];

describe("saturation in the watcher", () => {
  test("a PVC filling towards its capacity pages forecast_pvc through the watcher, its stats read per node", async () => {
    const lines: string[] = [];
    const printed: string[] = [];
    const running = await watcher(["--sources=auto"], lines, printed);
    try {
      expect(lines.some((line) => line.endsWith("source saturation: enabled\n"))).toBe(true);
      const base = Math.floor(Date.now() / 1000) * 1000 - 5 * MIN;
      for (let i = 0; i <= 12 && !printed.some((text) => text.includes("forecast_pvc")); i++) {
        const time = new Date(base + i * MIN).toISOString();
        api.scenario.setVolumeUsage({
          node: "node-1",
          namespace: "prod",
          claim: "logs",
          pod: "db-0",
          usedBytes: (400 + 10 * i) * MI,
          capacityBytes: 1024 * MI,
          time,
        });
        const asked = api.requests().length;
        await waitFor(
          () =>
            api
              .requests()
              .slice(asked)
              .some((request) => request.path.endsWith("/proxy/stats/summary"))
              ? true
              : undefined,
          5000,
          `stats round ${i}`,
        );
      }
      const page = await waitFor(
        () => printed.find((text) => text.includes('"reason": "forecast_pvc"')),
        5000,
        "the PVC forecast",
      );
      expect(page).toContain('"kind": "saturation.forecast"');
      expect(page).toContain('"uid": "pvc:prod/logs"');
      expect(page).toContain('"kind_of_object": "PersistentVolumeClaim"');
      expect(page).toContain('"severity": "warning"');
      expect(running.ready()).toBe(true);
    } finally {
      await running.stop();
      api.scenario.removeVolumeUsage("node-1", "prod", "logs");
    }
  });

  test("get nodes/proxy denied: enabled, degraded (no PVC forecasts), under auto and named alike; no stats read", async () => {
    api.scenario.setGrants(proxyDenied);
    try {
      for (const sources of ["auto", "cluster-events,saturation"]) {
        const lines: string[] = [];
        api.clearRequests();
        const running = await watcher([`--sources=${sources}`], lines);
        try {
          expect(lines.filter((line) => line.includes("source saturation:"))).toEqual([
            expect.stringContaining(
              "source saturation: enabled, degraded (get nodes/proxy cluster-wide denied — no PVC forecasts)",
            ),
          ]);
          await waitFor(
            () =>
              api.requests().filter((request) => request.path === "/apis/metrics.k8s.io/v1beta1/pods").length >= 3
                ? true
                : undefined,
            5000,
            "three metrics polls",
          );
          expect(api.requests().filter((request) => request.path.includes("/proxy/"))).toEqual([]);
          expect(running.ready()).toBe(true);
        } finally {
          await running.stop();
        }
      }
    } finally {
      api.scenario.setGrants(undefined);
    }
  });

  test("a required grant denied: auto disables it with one line; named, startup refuses naming the grant", async () => {
    api.scenario.setGrants([
      {
        verbs: ["get", "list", "watch", "create"],
        apiGroups: ["", "authorization.k8s.io"],
        resources: ["events", "pods", "nodes", "nodes/proxy", "selfsubjectaccessreviews"],
      },
    ]);
    try {
      const lines: string[] = [];
      const running = await watcher(["--sources=auto"], lines);
      await running.stop();
      expect(lines.filter((line) => line.includes("source saturation:"))).toEqual([
        expect.stringContaining(
          'source saturation: disabled (missing "get pods.metrics.k8s.io cluster-wide" — grant it, or name it in --sources to make this fatal)',
        ),
      ]);
      const refused = await watcher(["--sources=cluster-events,saturation"], []).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(StartupRefusal);
      expect(String((refused as Error).message)).toContain(
        'source "saturation" requires permission to "get pods.metrics.k8s.io cluster-wide"',
      );
    } finally {
      api.scenario.setGrants(undefined);
    }
  });

  test("without metrics-server: auto turns it off with one line and is ready; named, startup refuses", async () => {
    api.scenario.setApiServed("metrics.k8s.io/v1beta1", false);
    try {
      const lines: string[] = [];
      const running = await watcher(["--sources=auto"], lines);
      try {
        expect(lines.filter((line) => line.includes("source saturation:"))).toEqual([
          expect.stringContaining(
            "source saturation: disabled (metrics.k8s.io/v1beta1 unavailable — install metrics-server)",
          ),
        ]);
        await waitFor(() => (running.ready() ? true : undefined), 5000, "ready");
      } finally {
        await running.stop();
      }
      const refused = await watcher(["--sources=cluster-events,saturation"], []).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(StartupRefusal);
      expect(String((refused as Error).message)).toContain("install metrics-server, or remove it from --sources");
    } finally {
      api.scenario.setApiServed("metrics.k8s.io/v1beta1", true);
    }
  });
});
