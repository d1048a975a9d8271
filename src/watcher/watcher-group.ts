/**
 * Every cluster one process watches (`--clusters`, `--clusters-from`): one runner per cluster, each
 * with the cluster's name in its payloads and metrics, its own dedup file and store (per-cluster
 * suffix on the stem), and log lines prefixed with `[cluster]`. /readyz is ready once every
 * runner is; /metrics merges the runners' series under one HELP/TYPE per family.
 */
import type { WatcherConfig } from "../cli/watcher-config.ts";
import type { Logger } from "../telemetry/logger.ts";
import { ClusterSelectionError, perClusterPath, resolveClusters } from "./kube/cluster-targets.ts";
import { type RunnerOptions, type RunningWatcher, StartupRefusal, startWatcher } from "./watch-runner.ts";

export interface ClusterRunner {
  name: string;
  watcher: RunningWatcher;
}

export interface WatcherGroup {
  runners: ClusterRunner[];
  ready(): boolean;
  /** Why /readyz is 503 (undefined when ready). */
  notReady(): string | undefined;
  /** Lines /readyz adds to its body whatever its status: optional watches failing, per cluster. */
  degraded(): string[];
  render(): string;
  stop(): Promise<void>;
}

function prefixed(logger: Logger, name: string): Logger {
  const tag = `[${name}] `;
  return { debug: (m) => logger.debug(tag + m), info: (m) => logger.info(tag + m), warn: (m) => logger.warn(tag + m), error: (m) => logger.error(tag + m) };
}

/** Prometheus text of several registries as one: each family's HELP and TYPE once, then every sample. */
export function mergeExpositions(texts: readonly string[]): string {
  const families = new Map<string, { header: string[]; samples: string[] }>();
  for (const text of texts) {
    let current: { header: string[]; samples: string[] } | undefined;
    for (const line of text.split("\n")) {
      if (line === "") continue;
      const header = /^# (HELP|TYPE) (\S+)/.exec(line);
      if (header) {
        const name = header[2] ?? "";
        current = families.get(name) ?? { header: [], samples: [] };
        if (!families.has(name)) families.set(name, current);
        if (current.header.length < 2 && !current.header.includes(line)) current.header.push(line);
        continue;
      }
      current?.samples.push(line);
    }
  }
  return [...families.values()].map((family) => [...family.header, ...family.samples].join("\n")).join("\n").concat("\n");
}

export async function startWatcherGroup(config: WatcherConfig, logger: Logger, options: RunnerOptions = {}): Promise<WatcherGroup> {
  let clusters;
  try {
    clusters = options.connection ? [{ name: config.clusterName, connection: options.connection }] : resolveClusters(config);
  } catch (error) {
    if (error instanceof ClusterSelectionError) throw new StartupRefusal(error.message);
    throw error;
  }
  const multi = clusters.length > 1 || config.clusters.length > 0 || config.clustersFrom !== undefined;
  if (multi) logger.info(`watcher: ${clusters.length} cluster(s): ${clusters.map((cluster) => cluster.name).join(", ")}`);
  const runners: ClusterRunner[] = [];
  try {
    for (const cluster of clusters) {
      const own: WatcherConfig = {
        ...config,
        clusterName: cluster.name,
        dedupPersist: config.dedupPersist ? perClusterPath(config.dedupPersist, cluster.name, multi) : undefined,
        store: config.store ? perClusterPath(config.store, cluster.name, multi) : undefined,
        // Startup warnings are the process's, logged once.
        warnings: runners.length === 0 ? config.warnings : [],
      };
      runners.push({ name: cluster.name, watcher: await startWatcher(own, multi ? prefixed(logger, cluster.name) : logger, { ...options, connection: cluster.connection }) });
    }
  } catch (error) {
    await Promise.all(runners.map((runner) => runner.watcher.stop()));
    throw error;
  }
  const waiting = () => runners.filter((runner) => !runner.watcher.ready());
  return {
    runners,
    ready: () => waiting().length === 0,
    notReady: () => {
      const pending = waiting();
      if (pending.length === 0) return undefined;
      const why = (runner: ClusterRunner) => (runner.watcher.accessRevoked() ? "access revoked" : "syncing");
      if (!multi) return why(pending[0] as ClusterRunner) === "syncing" ? "informer caches syncing" : "access revoked, runner stopped";
      return `waiting on ${pending.length} of ${runners.length} cluster(s): [${pending.map((runner) => `${runner.name} (${why(runner)})`).join(" ")}]`;
    },
    degraded: () => runners.flatMap((runner) => runner.watcher.degraded().map((line) => (multi ? `[${runner.name}] ${line}` : line))),
    render: () => mergeExpositions(runners.map((runner) => runner.watcher.metrics.render())),
    stop: async () => {
      await Promise.all(runners.map((runner) => runner.watcher.stop()));
    },
  };
}
