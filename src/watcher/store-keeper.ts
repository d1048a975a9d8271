/**
 * The runner's upkeep of the store's memory and the graph's tombstones: restores the topology
 * graph from its snapshot before the watches list (D425), snapshots it every
 * `--graph-snapshot-interval` and at stop, distills facts every `--distill-interval` (D424; not
 * at stop: the rows are durable and the next run's watermark picks them up, so a large backlog
 * never holds a SIGTERM), and prunes the graph's tombstones on a timer besides on every deletion (D426). Each
 * step logs one line and never throws: the store's memory is best effort, the pipeline is not.
 */
import type { Logger } from "../telemetry/logger.ts";
import type { OccurrenceStore } from "./occurrence-store.ts";
import type { ClusterGraph } from "./sources/cluster-graph.ts";
import type { WatcherMetrics } from "./watcher-metrics.ts";

const TOMBSTONE_PRUNE_MS = 60_000;

export interface StoreKeeperParts {
  store: OccurrenceStore | undefined;
  /** The graph storms read; snapshots need it (and the store). */
  graph: ClusterGraph | undefined;
  snapshotGraph: boolean;
  distillIntervalMs: number;
  graphSnapshotIntervalMs: number;
  logger: Logger;
  metrics: WatcherMetrics;
  now: () => number;
}

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

export class StoreKeeper {
  constructor(private readonly parts: StoreKeeperParts) {
    const { graph, metrics } = parts;
    if (graph)
      metrics.gauge(
        "graph_tombstones",
        "deleted pods and nodes remembered for clearance (2 h)",
        () => graph.tombstones,
      );
  }

  private get snapshotting(): boolean {
    return this.parts.snapshotGraph && this.parts.store !== undefined && this.parts.graph !== undefined;
  }

  /** Seeds the graph from the stored snapshot (before the watches start). */
  restoreGraph(): void {
    const { store, graph, logger } = this.parts;
    if (!this.snapshotting || !store || !graph) return;
    const snapshot = store.memory.loadGraph();
    if (!snapshot) return;
    if ("error" in snapshot) {
      logger.warn(`store: graph snapshot not restored: ${snapshot.error}`);
      return;
    }
    const restored = graph.restore(snapshot);
    const age = Math.max(0, Math.round((this.parts.now() - snapshot.at) / 1000));
    logger.info(
      `store: graph snapshot restored (${restored} objects, ${age}s old); storms correlate before the watches list`,
    );
  }

  snapshotGraph(): void {
    const { store, graph, logger } = this.parts;
    if (!this.snapshotting || !store || !graph) return;
    try {
      const saved = store.memory.saveGraph(graph.contents(), this.parts.now());
      if ("skipped" in saved) logger.warn(`store: graph snapshot not written: ${saved.skipped}`);
      else logger.debug(`store: graph snapshot written (${saved.bytes} bytes)`);
    } catch (error) {
      logger.error(`store: graph snapshot failed: ${message(error)}`);
    }
  }

  distill(): void {
    const { store, logger } = this.parts;
    if (!store || this.parts.distillIntervalMs <= 0) return;
    const result = store.distillQuietly();
    if (result) logger.info(`store: distilled ${result.rows} rows into ${result.facts} facts`);
    else logger.error("store: distillation failed (counted in watcher_distill_errors_total)");
  }

  /** The timers of the upkeep (the runner clears them at stop). */
  timers(): Array<ReturnType<typeof setInterval>> {
    const { graph, distillIntervalMs, graphSnapshotIntervalMs } = this.parts;
    return [
      ...(graph ? [setInterval(() => graph.pruneTombstones(), TOMBSTONE_PRUNE_MS)] : []),
      ...(this.snapshotting ? [setInterval(() => this.snapshotGraph(), graphSnapshotIntervalMs)] : []),
      ...(this.parts.store && distillIntervalMs > 0 ? [setInterval(() => this.distill(), distillIntervalMs)] : []),
    ];
  }

  /** At stop: the last snapshot, before the store closes. */
  final(): void {
    this.snapshotGraph();
  }
}
