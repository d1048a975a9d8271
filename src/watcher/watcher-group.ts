/**
 * Every cluster one process watches (`--clusters`, `--clusters-from`): one runner per cluster, each
 * with the cluster's name in its payloads and metrics, its own dedup file and store (per-cluster
 * suffix on the stem), and log lines prefixed with `[cluster]`. The clusters start side by side.
 * With several clusters, one that cannot be reached at startup (its access review got no answer)
 * does not stop the others: it is logged, counted (`watcher_cluster_start_failures_total`,
 * `watcher_cluster_up` 0), named in /readyz's body, and started again with backoff (1 s doubling
 * to 60 s) until it answers. /readyz is ready once every running cluster is (an unreachable one
 * does not hold it; none running is not ready); /metrics merges the series under one HELP/TYPE
 * per family. A single cluster that cannot be reached is a startup refusal, as before.
 */
import type { WatcherConfig } from "./watcher-config.ts";
import type { Logger } from "../telemetry/logger.ts";
import { backoffMs } from "./core/delivery-policy.ts";
import {
  ClusterSelectionError,
  perClusterPath,
  type ResolvedCluster,
  resolveClusters,
} from "./kube/cluster-targets.ts";
import {
  ClusterUnreachable,
  type RunnerOptions,
  type RunningWatcher,
  StartupRefusal,
  startWatcher,
} from "./watch-runner.ts";
import { WatcherMetrics } from "./watcher-metrics.ts";

export interface ClusterRunner {
  name: string;
  watcher: RunningWatcher;
}

export interface WatcherGroup {
  /** The clusters running now (an unreachable one joins once it answers). */
  readonly runners: ClusterRunner[];
  ready(): boolean;
  /** Why /readyz is 503 (undefined when ready). */
  notReady(): string | undefined;
  /** Lines /readyz adds to its body whatever its status: unreachable clusters, optional watches failing. */
  degraded(): string[];
  /** One line per running source and its state (`source rollout: ready`), tagged by cluster when several. */
  sourceLines(): string[];
  render(): string;
  stop(): Promise<void>;
}

export interface GroupOptions extends RunnerOptions {
  /** Backoff between starts of an unreachable cluster (tests shorten it). */
  clusterRetry?: { minMs: number; maxMs: number };
}

const CLUSTER_RETRY = { minMs: 1000, maxMs: 60_000 };

interface ClusterSlot {
  name: string;
  config: WatcherConfig;
  logger: Logger;
  connection: ResolvedCluster["connection"];
  /** Group-level series of this cluster (reachability). */
  metrics: WatcherMetrics;
  runner?: RunningWatcher | undefined;
  failure?: { error: string; since: number; retryAt: number; attempts: number } | undefined;
  timer?: ReturnType<typeof setTimeout> | undefined;
  starting?: Promise<void> | undefined;
}

function prefixed(logger: Logger, name: string): Logger {
  const tag = `[${name}] `;
  return {
    debug: (m) => logger.debug(tag + m),
    info: (m) => logger.info(tag + m),
    warn: (m) => logger.warn(tag + m),
    error: (m) => logger.error(tag + m),
  };
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
  return [...families.values()]
    .map((family) => [...family.header, ...family.samples].join("\n"))
    .join("\n")
    .concat("\n");
}

function clustersOf(config: WatcherConfig, options: GroupOptions): ResolvedCluster[] {
  try {
    return options.connection
      ? [{ name: config.clusterName, connection: options.connection }]
      : resolveClusters(config);
  } catch (error) {
    if (error instanceof ClusterSelectionError) throw new StartupRefusal(error.message);
    throw error;
  }
}

export async function startWatcherGroup(
  config: WatcherConfig,
  logger: Logger,
  options: GroupOptions = {},
): Promise<WatcherGroup> {
  const clusters = clustersOf(config, options);
  const multi = clusters.length > 1 || config.clusters.length > 0 || config.clustersFrom !== undefined;
  if (multi)
    logger.info(`watcher: ${clusters.length} cluster(s): ${clusters.map((cluster) => cluster.name).join(", ")}`);
  const retry = options.clusterRetry ?? CLUSTER_RETRY;
  let stopped = false;
  const slots: ClusterSlot[] = clusters.map((cluster, index) => {
    const metrics = new WatcherMetrics(cluster.name);
    const slot: ClusterSlot = {
      name: cluster.name,
      connection: cluster.connection,
      metrics,
      logger: multi ? prefixed(logger, cluster.name) : logger,
      config: {
        ...config,
        clusterName: cluster.name,
        dedupPersist: config.dedupPersist ? perClusterPath(config.dedupPersist, cluster.name, multi) : undefined,
        store: config.store ? perClusterPath(config.store, cluster.name, multi) : undefined,
        // Startup warnings are the process's, logged once.
        warnings: index === 0 ? config.warnings : [],
      },
    };
    metrics.gauge("cluster_up", "1 while the cluster's runner runs, 0 while it cannot be reached", () =>
      slot.runner ? 1 : 0,
    );
    return slot;
  });

  /** At startup only an unreachable cluster is retried (any other refusal stops the process); later, any refusal is. */
  const start = async (slot: ClusterSlot, initial: boolean): Promise<void> => {
    try {
      const runner = await startWatcher(slot.config, slot.logger, { ...options, connection: slot.connection });
      slot.config = { ...slot.config, warnings: [] };
      if (stopped) {
        await runner.stop();
        return;
      }
      if (slot.failure)
        slot.logger.info(
          `watcher: cluster ${slot.name} answers again after ${slot.failure.attempts} failed start(s): watching`,
        );
      slot.runner = runner;
      slot.failure = undefined;
    } catch (error) {
      slot.config = { ...slot.config, warnings: [] };
      if (
        !multi ||
        stopped ||
        !(error instanceof StartupRefusal) ||
        (initial && !(error instanceof ClusterUnreachable))
      )
        throw error;
      const attempts = (slot.failure?.attempts ?? 0) + 1;
      const delay = backoffMs(attempts, retry.minMs, retry.maxMs);
      slot.failure = {
        error: error.message,
        since: slot.failure?.since ?? Date.now(),
        retryAt: Date.now() + delay,
        attempts,
      };
      slot.metrics.clusterStartFailures();
      const what = error instanceof ClusterUnreachable ? "cannot be reached" : "refused to start";
      slot.logger.error(
        `watcher: cluster ${slot.name} ${what} (${error.message}); the other clusters keep running; retrying in ${Math.round(delay / 100) / 10}s`,
      );
      slot.timer = setTimeout(() => {
        slot.timer = undefined;
        slot.starting = start(slot, false).catch((failure: unknown) =>
          slot.logger.error(
            `watcher: cluster ${slot.name} failed to start: ${failure instanceof Error ? failure.message : String(failure)}`,
          ),
        );
      }, delay);
    }
  };

  const stopAll = async () => {
    stopped = true;
    for (const slot of slots) if (slot.timer) clearTimeout(slot.timer);
    await Promise.all(slots.map((slot) => slot.starting));
    await Promise.all(slots.map((slot) => slot.runner?.stop()));
  };

  const results = await Promise.allSettled(slots.map((slot) => start(slot, true)));
  const refused = results.find((result): result is PromiseRejectedResult => result.status === "rejected");
  if (refused) {
    await stopAll();
    throw refused.reason;
  }

  const running = () =>
    slots.filter((slot): slot is ClusterSlot & { runner: RunningWatcher } => slot.runner !== undefined);
  const waiting = () => running().filter((slot) => !slot.runner.ready());
  const why = (slot: ClusterSlot & { runner: RunningWatcher }) =>
    slot.runner.accessRevoked() ? "access revoked" : "syncing";
  return {
    get runners() {
      return running().map((slot) => ({ name: slot.name, watcher: slot.runner }));
    },
    ready: () => running().length > 0 && waiting().length === 0,
    notReady: () => {
      if (running().length === 0)
        return `no cluster can be reached: [${slots.map((slot) => `${slot.name} (unreachable)`).join(" ")}]`;
      const pending = waiting();
      if (pending.length === 0) return undefined;
      if (!multi)
        return why(pending[0] as ClusterSlot & { runner: RunningWatcher }) === "syncing"
          ? "informer caches syncing"
          : "access revoked, runner stopped";
      return `waiting on ${pending.length} of ${slots.length} cluster(s): [${pending.map((slot) => `${slot.name} (${why(slot)})`).join(" ")}]`;
    },
    degraded: () =>
      slots.flatMap((slot) => {
        const tag = multi ? `[${slot.name}] ` : "";
        if (slot.failure)
          return [
            `${tag}cluster unreachable since ${new Date(slot.failure.since).toISOString()} (${slot.failure.attempts} failed start(s)): ${slot.failure.error}; next start in ${Math.max(0, Math.round((slot.failure.retryAt - Date.now()) / 1000))}s`,
          ];
        return (slot.runner?.degraded() ?? []).map((line) => `${tag}${line}`);
      }),
    sourceLines: () =>
      running().flatMap((slot) =>
        slot.runner.sources().map(({ name, state }) => `${multi ? `[${slot.name}] ` : ""}source ${name}: ${state}`),
      ),
    render: () =>
      mergeExpositions(
        slots.flatMap((slot) => [slot.metrics.render(), ...(slot.runner ? [slot.runner.metrics.render()] : [])]),
      ),
    stop: stopAll,
  };
}
