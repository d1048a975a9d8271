/**
 * The watcher's `watcher_*` series (docs/watcher-pipeline.md#metrics) on the shared metrics
 * registry. Every series carries the const label `cluster`; a `reason` label passes the
 * 100-distinct-reasons cap (D433).
 */
import { MetricsRegistry } from "../telemetry/metrics.ts";
import { ReasonCap } from "./core/reason-cap.ts";
import type { SeriesFamily } from "./core/source-spec.ts";
import type { EnrichmentReport } from "./enricher.ts";

/** `watcher_enrichment_bytes` buckets: 512 B × 2ⁿ for n = 0…7 (512 B to 64 KiB). */
export const ENRICHMENT_BYTE_BUCKETS = [0, 1, 2, 3, 4, 5, 6, 7].map((n) => 512 * 2 ** n);

type Count = (labels?: Record<string, string>, by?: number) => void;

export class WatcherMetrics {
  readonly registry = new MetricsRegistry();
  readonly eventsSeen: Count;
  readonly eventsInjected: Count;
  readonly eventsDeduped: Count;
  readonly eventsFiltered: Count;
  readonly injectErrors: Count;
  readonly injectShrinks: Count;
  readonly sessionCreates: Count;
  readonly recoveriesObserved: Count;
  readonly recoveriesReverted: Count;
  readonly recoveryDrops: Count;
  readonly stormsFormed: Count;
  readonly stormsResolved: Count;
  readonly stormMembers: Count;
  readonly stormUpdates: Count;
  readonly findings: Count;
  readonly runnerRestarts: Count;
  readonly sourceRestarts: Count;
  readonly storeRecords: Count;
  readonly storeWriteDrops: Count;
  readonly storePrunedRows: Count;
  readonly memoryFacts: Count;
  readonly distillErrors: Count;
  readonly accessRechecks: Count;
  readonly deliveriesRetried: Count;
  readonly deliveriesRetrySucceeded: Count;
  readonly deliveriesDropped: Count;
  readonly dispatchDelayed: Count;
  readonly dispatchRefused: Count;
  readonly clusterStartFailures: Count;
  readonly infoDropped: Count;
  readonly enrichments: Count;
  readonly enrichmentTruncated: Count;
  readonly enrichmentFailures: Count;
  readonly #enrichmentBytes: (labels: Record<string, string>, value: number) => void;
  readonly reasons = new ReasonCap();

  constructor(cluster: string) {
    this.cluster = cluster;
    const counter = (name: string, help: string): Count => {
      const count = this.registry.counter(`watcher_${name}`, help);
      return (labels = {}, by = 1) =>
        count(
          { cluster, ...labels, ...(labels.reason === undefined ? {} : { reason: this.reasons.label(labels.reason) }) },
          by,
        );
    };
    this.eventsSeen = counter("events_seen_total", "every signal, before the filter");
    this.eventsInjected = counter("events_injected_total", "signals that opened an incident");
    this.eventsDeduped = counter("events_deduped_total", "duplicates suppressed inside the dedup window");
    this.eventsFiltered = counter("events_filtered_total", "signals rejected by a filter gate");
    this.injectErrors = counter("inject_errors_total", "failed sink calls by operation");
    this.injectShrinks = counter("inject_shrinks_total", "payload parts shed to fit --inject-max-bytes");
    this.sessionCreates = counter("session_creates_total", "incident opens by outcome");
    this.recoveriesObserved = counter("recoveries_observed_total", "resolved outcomes by resolution");
    this.recoveriesReverted = counter("recoveries_reverted_total", "resolved.reverted outcomes");
    this.recoveryDrops = counter("recovery_drops_total", "outcomes with no session to go to");
    this.stormsFormed = counter("storms_formed_total", "storms formed");
    this.stormsResolved = counter("storms_resolved_total", "storms whose every member cleared");
    this.stormMembers = counter("storm_members_total", "storm members by kind");
    this.stormUpdates = counter("storm_updates_total", "storm.update payloads sent");
    this.findings = counter("findings_total", "new incidents by kind and severity");
    this.runnerRestarts = counter("runner_restarts_total", "source restarts after an error");
    this.sourceRestarts = counter(
      "source_restarts_total",
      "source workers replaced after a crash, an exit or an unresponsive event loop, by source",
    );
    this.storeRecords = counter("store_records_total", "occurrence rows written by route");
    this.storeWriteDrops = counter("store_write_drops_total", "occurrence rows lost by cause");
    this.storePrunedRows = counter("store_pruned_rows_total", "occurrence rows pruned by cause (ttl, size)");
    this.memoryFacts = counter("memory_facts_total", "distilled facts written by class (D424)");
    this.distillErrors = counter("distill_errors_total", "distillation runs that failed");
    this.accessRechecks = counter("access_rechecks_total", "access re-check reviews by outcome");
    this.deliveriesRetried = counter(
      "deliveries_retried_total",
      "payloads re-sent to the sink after a failure, by operation (open, inject)",
    );
    this.deliveriesRetrySucceeded = counter(
      "deliveries_retry_succeeded_total",
      "payloads delivered by a re-send, by operation",
    );
    this.deliveriesDropped = counter(
      "deliveries_dropped_total",
      "payloads given up by cause (rejected, expired, overflow)",
    );
    this.dispatchDelayed = counter(
      "dispatch_delayed_total",
      "signals that waited over a second for their turn in their incident's lane (D450)",
    );
    this.dispatchRefused = counter(
      "dispatch_refused_total",
      "signals refused because their lane or all lanes were full, by bound (lane, total; D450)",
    );
    this.clusterStartFailures = counter(
      "cluster_start_failures_total",
      "attempts to start watching a cluster that could not reach it",
    );
    this.infoDropped = counter("info_dropped_total", "info signals dropped because no --store keeps them, by kind");
    this.enrichments = counter("enrichments_total", "enrichment bundles gathered by outcome (ok, partial, failed)");
    this.enrichmentTruncated = counter(
      "enrichment_truncated_total",
      "bundles that dropped a section to fit --enrich-cap",
    );
    this.enrichmentFailures = counter("enrichment_failures_total", "enrichment stages that erred, by stage");
    const bytes = this.registry.histogram(
      "watcher_enrichment_bytes",
      "size of each enrichment bundle in bytes",
      ENRICHMENT_BYTE_BUCKETS,
    );
    this.#enrichmentBytes = (labels, value) => bytes({ cluster, ...labels }, value);
  }

  /** One enrichment run (D434): its outcome, its size, whether the cap cut it, the stages that erred. */
  enrichment(report: EnrichmentReport): void {
    this.enrichments({ outcome: report.outcome });
    this.#enrichmentBytes({}, report.bytes);
    if (report.truncated) this.enrichmentTruncated();
    for (const stage of report.failedStages) this.enrichmentFailures({ stage });
  }

  /** `watcher_sink_info{sink}` 1: which sink this watcher delivers to (D435). */
  sinkInfo(sink: string): void {
    this.sourceSeries(() => [
      {
        name: "sink_info",
        help: "the sink this watcher delivers to; value 1",
        samples: [{ labels: { sink }, value: 1 }],
      },
    ]);
  }

  private readonly gauges: Array<{ name: string; help: string; read: () => number }> = [];

  private readonly cluster: string;

  /** A gauge read at scrape time, rendered with the const `cluster` label like every series. */
  gauge(name: string, help: string, read: () => number): void {
    this.gauges.push({ name: `watcher_${name}`, help, read });
  }

  private readonly families: Array<() => SeriesFamily[]> = [];

  /** Labelled gauge families a source reports, read at scrape time (D409). */
  sourceSeries(read: () => SeriesFamily[]): void {
    this.families.push(read);
  }

  render(): string {
    const label = `{cluster="${this.cluster.replace(/["\\\n]/g, "_")}"}`;
    const gauges = this.gauges.map(
      (gauge) =>
        `# HELP ${gauge.name} ${gauge.help}\n# TYPE ${gauge.name} gauge\n${gauge.name}${label} ${gauge.read()}\n`,
    );
    const families = this.families.flatMap((read) => read()).map((family) => this.renderFamily(family));
    return `${this.registry.render()}${gauges.join("")}${families.join("")}`;
  }

  private renderFamily(family: SeriesFamily): string {
    const name = `watcher_${family.name}`;
    const quoted = (value: string) => value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
    const lines = family.samples.map((sample) => {
      const labels = Object.entries({ cluster: this.cluster, ...sample.labels })
        .map(([key, value]) => `${key}="${quoted(value)}"`)
        .join(",");
      return `${name}{${labels}} ${sample.value}\n`;
    });
    return `# HELP ${name} ${family.help}\n# TYPE ${name} gauge\n${lines.join("")}`;
  }
}
