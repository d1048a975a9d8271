/**
 * spar's own topology-drift and compute-class sources (D406-D412) against the fake apiserver,
 * run by the contract's host with short dwells and a fast sweep: a zone losing its last usable
 * node is domain_unavailable after the dwell, not before; a Deployment packed into one zone
 * against its DoNotSchedule constraint is spread_drift; pods pinned to a compute class with no
 * usable rank are rank_wedged, pods on its last rank rank_degraded; the ComputeClass is read when
 * served and its priorities cross-checked. In the watcher: both join `auto`, their series are on
 * /metrics, a missing ComputeClass API is said on the line; RBAC denied: `auto` disables each with
 * one line, naming it refuses startup naming the grant.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  computeClass,
  spreadDeployment,
  spreadPod,
  zonedNode,
} from "../../../scripts/fake-apiserver/builders-topology.ts";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import type { KubeObject } from "../../../scripts/fake-apiserver/selectors.ts";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import type { Signal } from "../../../src/watcher/core/signal.ts";
import type { SourceSpec } from "../../../src/watcher/core/source-spec.ts";
import { COMPUTE_CLASS_SPEC } from "../../../src/watcher/core/sources/compute-class-detector.ts";
import { COMPUTE_CLASS_DEFAULTS } from "../../../src/watcher/core/sources/compute-class-rules.ts";
import { TOPOLOGY_DEFAULTS, TOPOLOGY_DRIFT_SPEC } from "../../../src/watcher/core/sources/topology-drift.ts";
import { DetectorSource } from "../../../src/watcher/sources/detector-source.ts";
import { WatcherMetrics } from "../../../src/watcher/watcher-metrics.ts";
import { StartupRefusal, startWatcher } from "../../../src/watcher/watch-runner.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { waitFor } from "../../support/daemon.ts";

let api: FakeApiserver;
const sources: DetectorSource<unknown>[] = [];
const connection = () => ({ server: api.url, tls: {}, token: () => undefined });
beforeAll(async () => {
  api = await startFakeApiserver({});
});
afterAll(async () => {
  for (const source of sources) await source.stop();
  api.stop();
});

async function run<S>(spec: SourceSpec<S>, settings: S): Promise<{ emitted: Signal[]; source: DetectorSource<S> }> {
  const emitted: Signal[] = [];
  const source = new DetectorSource({
    spec: { ...spec, tickMs: 25, polls: (spec.polls ?? []).map((poll) => ({ ...poll, everyMs: 50 })) },
    settings,
    connection: connection(),
    emit: (signal) => emitted.push(signal),
    logger: createLogger("error"),
    onRestart: () => {},
  });
  sources.push(source as DetectorSource<unknown>);
  await source.start();
  await waitFor(() => (source.synced ? true : undefined), 5000, "synced");
  return { emitted, source };
}

async function stop(source: DetectorSource<unknown>): Promise<void> {
  await source.stop();
  sources.splice(sources.indexOf(source), 1);
}

/** Objects a test made, removed after it so the next test sees a clean cluster. */
function cleanup(objects: KubeObject[]): void {
  for (const object of objects.reverse()) {
    const metadata = object.metadata as { name: string; namespace?: string };
    api.scenario.delete({
      apiVersion: String(object.apiVersion),
      kind: String(object.kind),
      name: metadata.name,
      ...(metadata.namespace ? { namespace: metadata.namespace } : {}),
    });
  }
}

describe("topology-drift", () => {
  test("a zone whose only node goes NotReady is domain_unavailable after the dwell, not before", async () => {
    const made = ["a", "b", "c"].map((zone) => api.scenario.apply(zonedNode({ name: `zone-${zone}`, zone })));
    const { emitted, source } = await run(TOPOLOGY_DRIFT_SPEC, { ...TOPOLOGY_DEFAULTS, dwellMs: 400 });
    try {
      const transition = Date.now();
      api.scenario.apply(zonedNode({ name: "zone-c", zone: "c", ready: false }));
      await waitFor(() => (emitted.length > 0 ? true : undefined), 10_000, "domain_unavailable");
      expect((emitted[0]?.firstSeen ?? 0) - transition).toBeGreaterThanOrEqual(400);
      expect(emitted).toMatchObject([
        {
          kind: "leeway.domain_unavailable",
          uid: "domain:topology.kubernetes.io/zone=c",
          name: "c",
          severity: "critical",
        },
      ]);
    } finally {
      await stop(source as DetectorSource<unknown>);
      cleanup(made);
    }
  });

  test("a Deployment packed into one zone against its DoNotSchedule constraint is spread_drift; its series are exported", async () => {
    const made = ["a", "b", "c"].map((zone) => api.scenario.apply(zonedNode({ name: `spread-${zone}`, zone })));
    const constraints = [{ maxSkew: 1, whenUnsatisfiable: "DoNotSchedule" as const }];
    const deployment = api.scenario.apply(spreadDeployment({ namespace: "shop", name: "web", constraints }));
    made.push(deployment);
    const { emitted, source } = await run(TOPOLOGY_DRIFT_SPEC, { ...TOPOLOGY_DEFAULTS, dwellMs: 300 });
    try {
      for (const index of [0, 1, 2])
        made.push(
          api.scenario.apply(
            spreadPod({ namespace: "shop", deployment: "web", name: `web-${index}`, node: "spread-a", constraints }),
          ),
        );
      await waitFor(() => (emitted.length > 0 ? true : undefined), 10_000, "spread_drift");
      expect(emitted).toMatchObject([
        {
          kind: "leeway.spread_drift",
          kindOfObject: "Deployment",
          namespace: "shop",
          name: "web",
          uid: String((deployment.metadata as { uid: string }).uid),
          severity: "warning",
        },
      ]);
      expect(emitted[0]?.message).toContain("a=3, b=0, c=0");
      const metrics = new WatcherMetrics("topo");
      metrics.sourceSeries(() => source.series());
      const text = metrics.render();
      expect(text).toContain(
        'watcher_leeway_domain_objects{cluster="topo",namespace="shop",subject_kind="Deployment",subject="web",key="topology.kubernetes.io/zone",domain="a",state="active"} 3',
      );
      expect(text).toContain('watcher_leeway_domain_series_withheld{cluster="topo",reason="key_cap"} 0');
    } finally {
      await stop(source as DetectorSource<unknown>);
      cleanup(made);
    }
  });
});

describe("compute-class", () => {
  test("pods pinned to a class whose every rank is unusable are rank_wedged after the dwell, not before", async () => {
    const made = [
      api.scenario.apply(zonedNode({ name: "batch-0", zone: "a", computeClass: "batch", rank: 0, ready: false })),
      api.scenario.apply(
        zonedNode({ name: "batch-1", zone: "a", computeClass: "batch", rank: 1, unschedulable: true }),
      ),
    ];
    const { emitted, source } = await run(COMPUTE_CLASS_SPEC, { ...COMPUTE_CLASS_DEFAULTS, dwellMs: 400 });
    const started = Date.now();
    try {
      made.push(
        api.scenario.apply(spreadPod({ namespace: "jobs", deployment: "etl", name: "etl-0", computeClass: "batch" })),
      );
      await waitFor(() => (emitted.length > 0 ? true : undefined), 10_000, "rank_wedged");
      expect((emitted[0]?.firstSeen ?? 0) - started).toBeGreaterThanOrEqual(400);
      expect(emitted).toMatchObject([
        { kind: "leeway.rank_wedged", uid: "computeclass:batch", kindOfObject: "ComputeClass", severity: "critical" },
      ]);
    } finally {
      await stop(source as DetectorSource<unknown>);
      cleanup(made);
    }
  });

  test("pods on the last rank over the window are rank_degraded; the ComputeClass's priorities are read and cross-checked", async () => {
    const made = [
      api.scenario.apply(computeClass({ name: "web", priorities: [{ machineFamily: "n2" }, { machineFamily: "e2" }] })),
      api.scenario.apply(
        zonedNode({
          name: "web-0",
          zone: "a",
          computeClass: "web",
          labels: { "cloud.google.com/machine-family": "n2" },
        }),
      ),
      // Annotated rank 0 on an e2 machine: the priorities say 1 (a disagreement; the annotation wins).
      api.scenario.apply(
        zonedNode({
          name: "web-1",
          zone: "a",
          computeClass: "web",
          rank: 0,
          labels: { "cloud.google.com/machine-family": "e2" },
        }),
      ),
      api.scenario.apply(
        zonedNode({
          name: "web-2",
          zone: "b",
          computeClass: "web",
          labels: { "cloud.google.com/machine-family": "e2" },
        }),
      ),
    ];
    for (const index of [0, 1, 2])
      made.push(
        api.scenario.apply(
          spreadPod({
            namespace: "shop",
            deployment: "front",
            name: `front-${index}`,
            node: "web-2",
            computeClass: "web",
          }),
        ),
      );
    const { emitted, source } = await run(COMPUTE_CLASS_SPEC, { ...COMPUTE_CLASS_DEFAULTS, windowMs: 300 });
    try {
      await waitFor(() => (emitted.length > 0 ? true : undefined), 10_000, "rank_degraded");
      expect(emitted).toMatchObject([{ kind: "leeway.rank_degraded", uid: "computeclass:web", severity: "warning" }]);
      expect(emitted[0]?.message).toContain("100% of its placed pods ran on its last rank 1");
      const series = source.series();
      expect(series.find((family) => family.name === "leeway_preference_disagreement")?.samples).toEqual([
        { labels: { class: "web" }, value: 1 },
      ]);
    } finally {
      await stop(source as DetectorSource<unknown>);
      cleanup(made);
    }
  });
});

async function watcher(args: string[], lines: string[] = []) {
  const parsed = watcherConfigFromArgv([
    "--dry-run",
    "--kubeconfig=/nonexistent",
    "--cluster-name=topo",
    "--storm=off",
    "--recovery-stable-for=0",
    "--access-recheck=0",
    ...args,
  ]);
  if (!parsed.ok) throw new Error(parsed.error);
  return startWatcher(
    parsed.value,
    createLogger("info", (line) => lines.push(line)),
    {
      connection: connection(),
      stdout: () => {},
      env: {},
    },
  );
}

describe("in the watcher", () => {
  test("auto enables both; their series are on /metrics; without the ComputeClass API the line says so", async () => {
    const lines: string[] = [];
    const running = await watcher(["--sources=auto"], lines);
    try {
      expect(
        lines.filter((line) => line.includes("source topology-drift:") || line.includes("source compute-class:")),
      ).toEqual([
        expect.stringContaining("source topology-drift: enabled"),
        expect.stringContaining("source compute-class: enabled"),
      ]);
      await waitFor(() => (running.ready() ? true : undefined), 5000, "ready");
      const text = running.metrics.render();
      expect(text).toContain('watcher_leeway_domain_series_withheld{cluster="topo",reason="namespace"} 0');
      expect(text).toContain("# TYPE watcher_leeway_preference_disagreement gauge");
    } finally {
      await running.stop();
    }
    api.scenario.setApiServed("cloud.google.com/v1", false);
    try {
      const without: string[] = [];
      const again = await watcher(["--sources=cluster-events,compute-class"], without);
      await again.stop();
      expect(without).toContainEqual(
        expect.stringContaining(
          "source compute-class: enabled (cloud.google.com/v1 computeclasses not served: not read)",
        ),
      );
    } finally {
      api.scenario.setApiServed("cloud.google.com/v1", true);
    }
  });

  test("RBAC denied: auto disables each with one line naming the grant; named, startup refuses naming it", async () => {
    // Everything core and events, no apps and no nodes.
    api.scenario.setGrants([
      { verbs: ["list", "watch"], resources: ["events", "pods"] },
      { verbs: ["create"], resources: ["selfsubjectaccessreviews"] },
    ]);
    try {
      const lines: string[] = [];
      const running = await watcher(["--sources=auto"], lines);
      await running.stop();
      expect(
        lines.filter((line) => line.includes("source topology-drift:") || line.includes("source compute-class:")),
      ).toEqual([
        expect.stringContaining(
          'source topology-drift: disabled (missing "list nodes cluster-wide" — grant it, or name it in --sources to make this fatal)',
        ),
        expect.stringContaining(
          'source compute-class: disabled (missing "list nodes cluster-wide" — grant it, or name it in --sources to make this fatal)',
        ),
      ]);
      for (const name of ["topology-drift", "compute-class"]) {
        const refused = await watcher([`--sources=cluster-events,${name}`]).catch((error: unknown) => error);
        expect(refused).toBeInstanceOf(StartupRefusal);
        expect((refused as Error).message).toContain(
          `source "${name}" requires permission to "list nodes cluster-wide"`,
        );
      }
      // Nodes granted, apps not: topology-drift still needs its Deployments and StatefulSets.
      api.scenario.setGrants([
        { verbs: ["list", "watch"], resources: ["events", "pods", "nodes"] },
        { verbs: ["create"], resources: ["selfsubjectaccessreviews"] },
      ]);
      const refused = await watcher(["--sources=topology-drift"]).catch((error: unknown) => error);
      expect((refused as Error).message).toContain('requires permission to "list deployments.apps cluster-wide"');
      const granted = await watcher(["--sources=cluster-events,compute-class"]);
      await granted.stop();
    } finally {
      api.scenario.setGrants(undefined);
    }
  });
});
