/**
 * One running watcher: resolves access (sources, storms, recovery; refusals are fatal), builds the
 * sink, the dispatcher, the cluster-events source and (with storms or recovery) the topology graph
 * with only the watches its plan reviewed, restores and snapshots the dedup cache (and, through
 * store-keeper.ts, the graph snapshot and the distilled facts), sweeps recovery, and on stop
 * drains the dispatcher and persists the cache. Readiness waits for the
 * required source alone; the graph's optional watches are reported by `degraded()` instead.
 */
import { type WatcherConfig, failureDomain } from "./watcher-config.ts";
import type { Logger } from "../telemetry/logger.ts";
import {
  accessChecksFor,
  checkKey,
  discoveryNeeds,
  type DiscoveryAnswer,
  optionalAccess,
  optionalWatches,
  planAccess,
  sourceAccess,
  type AccessAnswer,
  type AccessCheck,
} from "./core/access-plan.ts";
import { AccessSweeper } from "./access-sweeper.ts";
import { DedupCache } from "./core/dedup-cache.ts";
import type { ClearanceReport } from "./core/open-conditions.ts";
import type { Severity, Signal } from "./core/signal.ts";
import { DEFAULT_DELIVERY_POLICY, type DeliveryPolicy } from "./core/delivery-policy.ts";
import type { IncidentSink } from "./core/sink.ts";
import { DeliveryQueue } from "./delivery-queue.ts";
import { PendingInjects } from "./pending-injects.ts";
import type { DeliverySpill } from "./delivery-spill.ts";
import { loadDedupFile, saveDedupFile } from "./dedup-file.ts";
import { Dispatcher } from "./dispatcher.ts";
import { Watchboard } from "./watchboard.ts";
import { reviewAccess } from "./kube/access-review.ts";
import { discoverResources } from "./kube/discovery.ts";
import { type KubeConnection, loadKubeConnection } from "./kube/kube-connection.ts";
import { DaemonSink } from "./sinks/daemon-sink.ts";
import { DryRunSink } from "./sinks/dry-run-sink.ts";
import { WebhookSink } from "./sinks/webhook-sink.ts";
import { TracedSink } from "./watcher-spans.ts";
import { buildSource } from "./sources/build-source.ts";
import { SourceThread } from "./sources/source-thread.ts";
import { SOURCE_PREFLIGHTS, sourceSettings } from "./sources/source-registry.ts";
import { SourceRefusal, type SourceRunner } from "./sources/source-runner.ts";
import { sourceSpec, specForSettings } from "./core/source-catalog.ts";
import { ClusterGraph } from "./sources/cluster-graph.ts";
import { SourceClearances } from "./source-clearances.ts";
import { incidentEnricher } from "./workload-enricher.ts";
import { OccurrenceStore } from "./occurrence-store.ts";
import { StoreKeeper } from "./store-keeper.ts";
import { WatcherMetrics } from "./watcher-metrics.ts";

const RECOVERY_TICK_MS = 15_000;
const STORE_FLUSH_MS = 1000;
/**
 * A full garbage collection every this much pipeline time while events flow (D148). The live
 * heap stays small (tens of MB); without it JSC lets garbage pile up to well over the working set
 * before collecting, and RSS keeps the high-water mark.
 */
const HEAP_TRIM_MS = 15_000;

/** Collects garbage when `HEAP_TRIM_MS` of the pipeline's clock passed since the last time. */
function heapTrimmer(now: () => number): () => void {
  let last = now();
  return () => {
    const at = now();
    if (at - last < HEAP_TRIM_MS) return;
    last = at;
    Bun.gc(true);
  };
}
const STORE_PRUNE_MS = 60_000;

export interface RunningWatcher {
  dispatcher: Dispatcher;
  metrics: WatcherMetrics;
  /** The required source has synced (optional watches never hold readiness). */
  ready(): boolean;
  /** Optional watches not synced or failing now, one line each (named in /readyz's body). */
  degraded(): string[];
  /** Every running source and its state, for /readyz (`ready`, `syncing`, `failing: …`, `restarting …`). */
  sources(): Array<{ name: string; state: string }>;
  /**
   * Ends a source's worker as a crash would (a drill: it is replaced with backoff and counted);
   * false when no such source runs in a worker.
   */
  killSource(name: string): boolean;
  /** Set once the access re-check has stopped the runner (a required permission revoked). */
  accessRevoked(): boolean;
  stop(): Promise<void>;
}

export interface RunnerOptions {
  env?: Record<string, string | undefined>;
  stdout?: (text: string) => void;
  /** Override the connection (tests); default from --in-cluster / --kubeconfig. */
  connection?: KubeConnection;
  recoveryTickMs?: number;
  /** The pipeline's clock (dedup, recovery, storms); the benchmark compresses time with it. */
  now?: () => number;
  /**
   * Where sources run: each in its own worker (the default, D413), or on the main thread (a
   * test or bench that drives the sources' clock with `now`, which cannot cross a thread).
   */
  sourceThreads?: "workers" | "main";
  /** Override the delivery queue's backoff and bounds (tests). */
  deliveryPolicy?: DeliveryPolicy;
}

/**
 * Where the pending-inject journal lives: beside the dedup file (`<dedup-persist>.pending`), else
 * beside the store; with neither (or in dry-run, which never fails) pending injects are memory only.
 */
export function pendingInjectsPath(
  config: Pick<WatcherConfig, "dryRun" | "dedupPersist" | "store">,
): string | undefined {
  if (config.dryRun) return undefined;
  const beside = config.dedupPersist ?? config.store;
  return beside ? `${beside}.pending` : undefined;
}

export class StartupRefusal extends Error {}

/** A source's own refusal (its flags or environment, D402) is a startup refusal. */
function refusingStart<T>(work: () => T): T {
  const refuse = (error: unknown): never => {
    throw error instanceof SourceRefusal ? new StartupRefusal(error.message) : error;
  };
  try {
    const result = work();
    return (result instanceof Promise ? result.catch(refuse) : result) as T;
  } catch (error) {
    return refuse(error);
  }
}

/** One source's state as /readyz names it. */
function sourceState(source: SourceRunner): string {
  const restarts =
    source instanceof SourceThread && source.restarts > 0 ? ` (worker restarted ${source.restarts}×)` : "";
  if (source instanceof SourceThread && source.state === "restarting")
    return `restarting${restarts}: ${source.lastError}`;
  if (source.synced) return `ready${restarts}`;
  return source.lastError ? `failing${restarts}: ${source.lastError}` : `syncing${restarts}`;
}

/** The grants and polls of the named sources whose spec scopes them by their settings (D384). */
function scopedSources(config: WatcherConfig) {
  return Object.fromEntries(
    config.sources.names.flatMap((name) => {
      const spec = sourceSpec(name);
      if (!spec?.scoped) return [];
      const scoped = specForSettings(spec, sourceSettings(name, config));
      return [[name, { required: scoped.required, polls: scoped.polls ?? [] }]];
    }),
  );
}

/** The startup access review could not be answered: the cluster was not reached (retryable). */
export class ClusterUnreachable extends StartupRefusal {}

function buildSink(
  config: WatcherConfig,
  env: Record<string, string | undefined>,
  stdout: (text: string) => void,
  logger: Logger,
): IncidentSink {
  if (config.dryRun) return new DryRunSink(stdout, config.mode === "shared" ? config.targetSession : undefined);
  if (config.sink === "webhook") {
    const sinkToken = config.sinkTokenEnv ? env[config.sinkTokenEnv] : undefined;
    // Named but unset would send every incident without the credential the receiver expects.
    if (config.sinkTokenEnv && !sinkToken)
      throw new StartupRefusal(`--sink-token-env=${config.sinkTokenEnv}: the variable is not set`);
    return new WebhookSink({
      sinkUrl: config.sinkUrl ?? "",
      token: sinkToken,
      onLocalId: () =>
        logger.warn("webhook receiver answered without an incident id; ids are generated locally (local-…)"),
    });
  }
  const token = config.tokenEnv ? env[config.tokenEnv] : undefined;
  if (!token) throw new StartupRefusal(`--token-env=${config.tokenEnv}: the variable is not set`);
  return new DaemonSink({
    daemonUrl: config.daemonUrl ?? "",
    token,
    ...(config.owner ? { owner: config.owner } : {}),
    ...(config.mode === "shared" && config.targetSession ? { targetSession: config.targetSession } : {}),
  });
}

/** The sink behind the delivery queue, with its journal beside the watcher's state (or in memory). */
function buildDelivery(
  inner: IncidentSink,
  config: WatcherConfig,
  logger: Logger,
  metrics: WatcherMetrics,
  policy: DeliveryPolicy | undefined,
  spill: DeliverySpill | undefined,
): DeliveryQueue {
  const journalPath = pendingInjectsPath(config);
  if (!journalPath && !config.dryRun)
    logger.info(
      "delivery: pending injects are kept in memory only (set --dedup-persist or --store to keep them across a restart)",
    );
  return new DeliveryQueue(new TracedSink(inner), {
    journal: new PendingInjects(
      journalPath,
      logger,
      spill ? { store: spill, windowSize: (policy ?? DEFAULT_DELIVERY_POLICY).maxPending } : undefined,
    ),
    logger,
    metrics,
    ...(policy ? { policy } : {}),
  });
}

function enrichSeverities(level: WatcherConfig["enrich"]["level"]): Set<Severity> {
  return new Set<Severity>(level === "off" ? [] : level === "warning" ? ["critical", "warning"] : ["critical"]);
}

export async function startWatcher(
  config: WatcherConfig,
  logger: Logger,
  options: RunnerOptions = {},
): Promise<RunningWatcher> {
  const env = options.env ?? process.env;
  for (const warning of config.warnings) logger.warn(warning);
  const connection =
    options.connection ?? loadKubeConnection({ inCluster: config.inCluster, kubeconfig: config.kubeconfig });
  const planInput = {
    sources: config.sources,
    storm: config.storm.setting,
    recovery: config.recoveryStableForMs > 0,
    scoped: scopedSources(config),
  };
  const answers = new Map<string, AccessAnswer>();
  const discovered = new Map<string, DiscoveryAnswer>();
  await Promise.all([
    ...accessChecksFor(planInput).map(async (check) =>
      answers.set(checkKey(check), await reviewAccess(connection, check)),
    ),
    // D386: the APIs sources need are discovered beside the access reviews; the plan decides.
    ...discoveryNeeds(planInput).map(async (groupVersion) =>
      discovered.set(groupVersion, await discoverResources(connection, groupVersion)),
    ),
  ]);
  const plan = planAccess(
    { ...planInput, discovery: (groupVersion) => discovered.get(groupVersion) ?? { error: "not discovered" } },
    (check) => answers.get(checkKey(check)) ?? { error: "not reviewed" },
  );
  for (const note of plan.notes) logger.info(note);
  if (plan.refusal) throw plan.unreachable ? new ClusterUnreachable(plan.refusal) : new StartupRefusal(plan.refusal);
  const heldAtStartup = (check: AccessCheck) => {
    const answer = answers.get(checkKey(check));
    return answer !== undefined && "allowed" in answer && answer.allowed;
  };
  const metrics = new WatcherMetrics(config.clusterName);
  const store = config.store
    ? new OccurrenceStore({
        path: config.store,
        maxBytes: config.storeMaxBytes,
        ttlMs: config.storeTtlMs,
        metrics,
        distill: config.distillIntervalMs > 0,
        ...(options.now ? { now: options.now } : {}),
      })
    : undefined;
  if (store) {
    const pruned = store.prune();
    logger.info(
      `store: ${config.store} open (${store.count()} rows; pruned ${pruned.ttl} past --store-ttl, ${pruned.size} over --store-max-mb)`,
    );
  }
  const delivery = buildDelivery(
    buildSink(config, env, options.stdout ?? ((text) => process.stdout.write(text)), logger),
    config,
    logger,
    metrics,
    options.deliveryPolicy,
    store?.spill,
  );
  const sink: IncidentSink = delivery;
  const restarted = () => metrics.runnerRestarts();
  // Recovery reads pod readiness from the same graph, so it is built for storms or for recovery,
  // with the watches the plan reviewed (recovery alone watches pods, never replicasets).
  const graph =
    plan.storm || plan.recovery
      ? new ClusterGraph(connection, logger, restarted, optionalWatches(plan), { now: options.now ?? Date.now })
      : undefined;
  const recoveryStableForMs = plan.recovery ? config.recoveryStableForMs : 0;
  const dedup = new DedupCache(config.dedupWindowMs);
  const clearances = new SourceClearances(options.now);
  if (config.dedupPersist) loadDedupFile(config.dedupPersist, dedup, logger);
  // Severity routing (D418): per-incident warnings go to the watchboard; shared mode has no routing.
  const watchboard =
    config.mode === "per-incident"
      ? new Watchboard(
          { cluster: config.clusterName, injectMaxBytes: config.injectMaxBytes, ...config.watchboard },
          { sink, dedup, logger, metrics, now: options.now ?? Date.now },
        )
      : undefined;
  const dispatcher = new Dispatcher(
    {
      cluster: config.clusterName,
      ...(config.project ? { project: config.project } : {}),
      zone: failureDomain(config.zone, config.region),
      mode: config.mode,
      filter: config.filter,
      dedupWindowMs: config.dedupWindowMs,
      recoveryStableForMs,
      ...(plan.storm && config.storm.windowMs > 0
        ? {
            storm: {
              min: config.storm.min,
              windowMs: config.storm.windowMs,
              mineMin: config.storm.mineMin,
              mine: config.storm.mine,
              clusterFallback: config.storm.clusterFallback,
            },
          }
        : {}),
      enrichSeverities: enrichSeverities(config.enrich.level),
      ...(config.enrich.level === "off" ? {} : { enrichCapBytes: config.enrich.capBytes }),
      injectMaxBytes: config.injectMaxBytes,
      severityOverrides: config.severityOverrides,
      // D421: regressions need the store (the occurrence memory) and have no place in shared mode.
      ...(store && config.mode === "per-incident" ? { regressFactor: config.triageRegressFactor } : {}),
    },
    {
      sink,
      logger,
      metrics,
      dedup,
      ...(options.now ? { now: options.now } : {}),
      ...(store ? { record: (row) => store.record(row) } : {}),
      openPending: (key) => delivery.hasPendingOpen(key),
      ...(watchboard ? { watchboard } : {}),
      // D437: what the sources report cleared first, then the graph's pod and node clearance.
      ...(plan.recovery ? { clearance: clearances.chain(graph?.clearance) } : {}),
      ...(graph && plan.storm ? { topology: graph.ancestors, fleetSize: graph.fleetSize } : {}),
      ...(config.enrich.level === "off"
        ? {}
        : {
            enrich: incidentEnricher(connection, {
              capBytes: config.enrich.capBytes,
              logLines: config.enrich.logLines,
              timeoutMs: config.enrich.timeoutMs,
              lists: config.enrich.lists,
              observe: (report) => metrics.enrichment(report),
              // D440: a pod's ReplicaSet from the storm graph saves the owner chain a GET.
              ...(graph && plan.storm ? { cachedOwner: graph.replicaSet } : {}),
              ...(config.enrich.preflight
                ? { preflight: (check: AccessCheck) => reviewAccess(connection, check) }
                : {}),
            }),
          }),
    },
  );
  delivery.listener = {
    opened: (binding, sessionId) => void dispatcher.bindQueuedOpen(binding, sessionId),
    delivered: (binding) => dispatcher.noteQueuedDelivery(binding),
  };
  metrics.gauge("active_incidents", "dedup cache size", () => dispatcher.dedup.size);
  metrics.gauge("recovery_tracking", "incidents tracked for recovery", () => dispatcher.recovery.size);
  const trimHeap = heapTrimmer(options.now ?? Date.now);
  // Every source the plan enabled, each in its own worker (D413) unless told to run in process.
  const emitSignal = (signal: Signal) => {
    trimHeap();
    void dispatcher.dispatch(signal);
  };
  const sources: SourceRunner[] = plan.sources.map((name) => {
    const context = {
      values: config.values,
      env,
      connection,
      without: new Set(plan.without[name] ?? []),
      emit: emitSignal,
      logger,
      onRestart: restarted,
      ...(plan.recovery ? { clearance: (report: ClearanceReport) => clearances.report(name, report) } : {}),
      ...(options.now ? { now: options.now } : {}),
    };
    return refusingStart(() => {
      SOURCE_PREFLIGHTS[name]?.(context);
      return options.sourceThreads === "main"
        ? buildSource(name, context)
        : new SourceThread(name, context, { onCrash: (source) => metrics.sourceRestarts({ source }) });
    });
  });
  // Series a source's detector reports (D409), read at scrape time.
  for (const source of sources) {
    const series = source.series?.bind(source);
    if (series) metrics.sourceSeries(series);
  }
  // D424-D426: the store's memory and the graph's tombstones; the snapshot seeds the graph first.
  const keeper = new StoreKeeper({
    store,
    graph,
    snapshotGraph: plan.storm,
    distillIntervalMs: config.distillIntervalMs,
    graphSnapshotIntervalMs: config.graphSnapshotIntervalMs,
    logger,
    metrics,
    now: options.now ?? Date.now,
  });
  keeper.restoreGraph();
  if (graph) await graph.start();
  try {
    await refusingStart(() => Promise.all(sources.map((source) => source.start())));
  } catch (error) {
    await Promise.all(sources.map((source) => source.stop()));
    await graph?.stop();
    throw error;
  }
  delivery.start();
  const timers: Array<ReturnType<typeof setInterval>> = [];
  let watching = true;
  // D435: 1 while this runner's sources watch, 0 once they stopped (an access re-check or shutdown).
  metrics.gauge("runner_up", "1 while this cluster's runner watches", () => (watching ? 1 : 0));
  metrics.sinkInfo(config.sink);
  const stopWatches = async () => {
    if (!watching) return;
    watching = false;
    await Promise.all(sources.map((source) => source.stop()));
    await graph?.stop();
  };
  const sweeper =
    config.accessRecheckMs > 0
      ? new AccessSweeper(
          plan.sources.flatMap((name) => [...sourceAccess(planInput, name)]),
          optionalAccess(plan),
          heldAtStartup,
          { connection, dispatcher, logger, metrics, stopRunner: stopWatches },
        )
      : undefined;
  if (sweeper) timers.push(setInterval(() => void sweeper.sweep(), config.accessRecheckMs));
  if (recoveryStableForMs > 0)
    timers.push(setInterval(() => void dispatcher.sweepRecovery(), options.recoveryTickMs ?? RECOVERY_TICK_MS));
  const persist = () => {
    if (!config.dedupPersist) return;
    try {
      saveDedupFile(config.dedupPersist, dispatcher.dedup);
    } catch (error) {
      logger.error(`dedup: snapshot failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  if (config.dedupPersist && config.snapshotIntervalMs > 0)
    timers.push(setInterval(persist, config.snapshotIntervalMs));
  if (store)
    timers.push(
      setInterval(() => store.flush(), STORE_FLUSH_MS),
      setInterval(() => store.prune(), STORE_PRUNE_MS),
    );
  timers.push(...keeper.timers());
  watchboard?.start();
  let stopping: Promise<void> | undefined;
  logger.info(
    `watcher: watching (sink=${config.dryRun ? "dry-run" : config.sink}, mode=${config.mode}, storm=${plan.storm ? "on" : "off"}, cluster=${JSON.stringify(config.clusterName)})`,
  );
  return {
    dispatcher,
    metrics,
    ready: () => watching && sources.every((source) => source.synced),
    degraded: () =>
      watching
        ? [
            ...(graph?.failing() ?? []).map(
              (watch) => `optional watch ${watch.name} not synced${watch.error ? `: ${watch.error}` : ""}`,
            ),
          ]
        : [],
    sources: () => sources.map((source) => ({ name: source.name, state: sourceState(source) })),
    killSource: (name) => {
      const thread = sources.find((source) => source.name === name);
      if (!(thread instanceof SourceThread)) return false;
      thread.kill();
      return true;
    },
    accessRevoked: () => sweeper?.revoked ?? false,
    stop: () => {
      stopping ??= (async () => {
        for (const timer of timers) clearInterval(timer);
        await stopWatches();
        await dispatcher.idle();
        await watchboard?.stop();
        await delivery.stop();
        persist();
        keeper.final();
        store?.close();
      })();
      return stopping;
    },
  };
}
