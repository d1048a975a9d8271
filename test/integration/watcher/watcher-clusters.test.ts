/**
 * Multi-cluster watching against two fake kube-apiservers: `--clusters-from=kubeconfig:PATH` runs
 * one runner per context (the context name is the `cluster` of its payloads and metrics, each
 * cluster has its own dedup file), `--clusters=name=endpoint` reuses the kubeconfig's credentials
 * per endpoint, one unreachable cluster is retried while the others run, and provider discovery is
 * refused in this build.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { perClusterPath } from "../../../src/watcher/kube/cluster-targets.ts";
import { StartupRefusal } from "../../../src/watcher/watch-runner.ts";
import { type GroupOptions, mergeExpositions, startWatcherGroup } from "../../../src/watcher/watcher-group.ts";
import { tempDir, waitFor } from "../../support/daemon.ts";
import { writeKubeconfig } from "../../support/kube.ts";

let east: FakeApiserver;
let west: FakeApiserver;
let dir: string;
let twoContexts: string;

beforeAll(async () => {
  dir = tempDir();
  east = await startFakeApiserver({ tokens: { "east-token": "watcher" } });
  west = await startFakeApiserver({ tokens: { "west-token": "watcher", "east-token": "watcher" } });
  twoContexts = join(dir, "kubeconfig");
  const entry = (name: string, server: string, token: string) => ({
    cluster: { name, cluster: { server } },
    user: { name, user: { token } },
    context: { name, context: { cluster: name, user: name } },
  });
  const both = [entry("east", east.url, "east-token"), entry("west", west.url, "west-token")];
  writeFileSync(
    twoContexts,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      "current-context": "east",
      clusters: both.map((item) => item.cluster),
      users: both.map((item) => item.user),
      contexts: both.map((item) => item.context),
    }),
  );
});

afterAll(async () => {
  await east.stop();
  await west.stop();
});

function crash(api: FakeApiserver, name: string) {
  const pod = api.scenario.createPod({
    namespace: "apps",
    name,
    node: "n1",
    containers: [{ name: "app", waitingReason: "CrashLoopBackOff", restartCount: 1 }],
  } as never);
  api.scenario.recordEvent({
    involvedObject: pod,
    reason: "BackOff",
    message: "Back-off restarting failed container app",
    type: "Warning",
    source: { host: "n1" },
  });
}

async function group(flags: string[], options: GroupOptions = {}) {
  const config = watcherConfigFromArgv([
    "--dry-run",
    "--storm=off",
    "--recovery-stable-for=0",
    "--backoff-min-count=1",
    "--enrich=off",
    ...flags,
  ]);
  if (!config.ok) throw new Error(config.error);
  const printed: string[] = [];
  const log: string[] = [];
  const started = await startWatcherGroup(
    config.value,
    createLogger("info", (line) => log.push(line)),
    { stdout: (text) => printed.push(text), ...options },
  );
  await waitFor(() => (started.ready() ? true : undefined), 8000, "every cluster synced");
  return { started, printed, log };
}

const clusterOf = (printed: string[], name: string) =>
  printed.filter((text) => text.includes(`"name": "${name}"`)).map((text) => /"cluster": "([^"]*)"/.exec(text)?.[1]);

describe("multi-cluster", () => {
  test("--clusters-from=kubeconfig:PATH: one runner per context, the context is the payload's cluster, per-cluster dedup files, merged metrics", async () => {
    const dedup = join(dir, "state", "dedup.json");
    const { started, printed, log } = await group([
      `--clusters-from=kubeconfig:${twoContexts}`,
      `--dedup-persist=${dedup}`,
      "--cluster-name=ignored",
    ]);
    try {
      expect(started.runners.map((runner) => runner.name)).toEqual(["east", "west"]);
      crash(east, "e-1");
      crash(west, "w-1");
      await waitFor(
        () => (clusterOf(printed, "e-1").length > 0 && clusterOf(printed, "w-1").length > 0 ? true : undefined),
        8000,
        "a payload from each cluster",
      );
      expect(clusterOf(printed, "e-1")).toEqual(["east"]);
      expect(clusterOf(printed, "w-1")).toEqual(["west"]);
      expect(log.some((line) => line.includes("[west] fire BackOff pod=apps/w-1"))).toBe(true);
      const metrics = started.render();
      expect(metrics.match(/# HELP watcher_events_injected_total /g)).toHaveLength(1);
      expect(metrics).toContain('watcher_events_injected_total{cluster="east",namespace="apps",reason="BackOff"} 1');
      expect(metrics).toContain('watcher_events_injected_total{cluster="west",namespace="apps",reason="BackOff"} 1');
      expect(started.notReady()).toBeUndefined();
    } finally {
      await started.stop();
    }
    expect(existsSync(join(dir, "state", "dedup.east.json"))).toBe(true);
    expect(existsSync(join(dir, "state", "dedup.west.json"))).toBe(true);
  }, 30_000);

  test("--clusters=name=endpoint: the kubeconfig's credentials against each endpoint", async () => {
    const kubeconfig = writeKubeconfig(join(dir, "single"), { server: "https://unused.invalid", token: "east-token" });
    const { started, printed } = await group([
      `--kubeconfig=${kubeconfig}`,
      `--clusters=prod-east=${east.url},prod-west=${west.url}`,
    ]);
    try {
      crash(east, "e-2");
      crash(west, "w-2");
      await waitFor(
        () => (clusterOf(printed, "e-2").length > 0 && clusterOf(printed, "w-2").length > 0 ? true : undefined),
        8000,
        "a payload from each endpoint",
      );
      expect(clusterOf(printed, "e-2")).toEqual(["prod-east"]);
      expect(clusterOf(printed, "w-2")).toEqual(["prod-west"]);
    } finally {
      await started.stop();
    }
  }, 30_000);

  test("one unreachable cluster does not stop the others: reported (log, metrics, /readyz body), retried with backoff, watched once it answers", async () => {
    const reserved = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
    const port = reserved.port ?? 0;
    reserved.stop(true);
    const kubeconfig = writeKubeconfig(join(dir, "single-late"), {
      server: "https://unused.invalid",
      token: "east-token",
    });
    const { started, printed, log } = await group(
      [`--kubeconfig=${kubeconfig}`, `--clusters=prod-east=${east.url},late=http://127.0.0.1:${port}`],
      { clusterRetry: { minMs: 200, maxMs: 400 } },
    );
    let late: FakeApiserver | undefined;
    try {
      expect(started.runners.map((runner) => runner.name)).toEqual(["prod-east"]);
      expect(started.notReady()).toBeUndefined();
      expect(log.some((line) => line.includes("[late] watcher: cluster late cannot be reached"))).toBe(true);
      expect(started.degraded()).toEqual([expect.stringContaining("[late] cluster unreachable since ")]);
      expect(started.degraded()[0]).toContain("ECONNREFUSED");
      const metrics = started.render();
      expect(metrics).toContain('watcher_cluster_up{cluster="late"} 0');
      expect(metrics).toContain('watcher_cluster_up{cluster="prod-east"} 1');
      expect(metrics).toMatch(/watcher_cluster_start_failures_total\{cluster="late"\} [1-9]/);
      crash(east, "e-3");
      await waitFor(
        () => (clusterOf(printed, "e-3").length > 0 ? true : undefined),
        8000,
        "the reachable cluster keeps running",
      );
      expect(clusterOf(printed, "e-3")).toEqual(["prod-east"]);
      await waitFor(
        () => (log.filter((line) => line.includes("cluster late cannot be reached")).length >= 2 ? true : undefined),
        8000,
        "the unreachable cluster retried",
      );
      expect(log.filter((line) => line.includes("cluster late cannot be reached")).length).toBeGreaterThanOrEqual(2);

      late = await startFakeApiserver({ port, tokens: { "east-token": "watcher" } });
      await waitFor(
        () => (started.runners.length === 2 && started.ready() ? true : undefined),
        8000,
        "the late cluster watched",
      );
      expect(log.some((line) => line.includes("watcher: cluster late answers again"))).toBe(true);
      crash(late, "l-1");
      await waitFor(
        () => (clusterOf(printed, "l-1").length > 0 ? true : undefined),
        8000,
        "a payload from the late cluster",
      );
      expect(clusterOf(printed, "l-1")).toEqual(["late"]);
      expect(started.degraded()).toEqual([]);
      expect(started.render()).toContain('watcher_cluster_up{cluster="late"} 1');
    } finally {
      await started.stop();
      await late?.stop();
    }
  }, 30_000);

  test("provider discovery needs a fleet-capable build: refused at startup", async () => {
    const config = watcherConfigFromArgv(["--dry-run", "--clusters-from=my-project/us-central1"]);
    if (!config.ok) throw new Error(config.error);
    await expect(
      startWatcherGroup(
        config.value,
        createLogger("error", () => {}),
      ),
    ).rejects.toThrow(StartupRefusal);
  });

  test("per-cluster paths and one HELP per merged family", () => {
    expect(perClusterPath("/var/lib/w/dedup.json", "prod", true)).toBe("/var/lib/w/dedup.prod.json");
    expect(perClusterPath("/var/lib/w/store", "a/b", true)).toBe("/var/lib/w/store.a_b");
    expect(perClusterPath("/var/lib/w/dedup.json", "prod", false)).toBe("/var/lib/w/dedup.json");
    const one = '# HELP x_total h\n# TYPE x_total counter\nx_total{cluster="a"} 1\n';
    const two = '# HELP x_total h\n# TYPE x_total counter\nx_total{cluster="b"} 2\n';
    expect(mergeExpositions([one, two])).toBe(
      '# HELP x_total h\n# TYPE x_total counter\nx_total{cluster="a"} 1\nx_total{cluster="b"} 2\n',
    );
  });
});
