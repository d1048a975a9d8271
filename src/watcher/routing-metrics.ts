/**
 * The severity-routing series (docs/watcher-pipeline.md#metrics; D423), registered on the
 * watcher's registry, each with the const `cluster` label:
 * `watcher_watchboard_entries_total{kind}`, `watcher_watchboard_digests_total`,
 * `watcher_watchboard_rotations_total`, `watcher_watchboard_reattached_total{kind}`,
 * `watcher_triage_regressed_total`,
 * `watcher_cross_source_followups_total{source}`. Registering a name twice shares one family.
 */
import type { WatcherMetrics } from "./watcher-metrics.ts";

type Count = (labels?: Record<string, string>, by?: number) => void;

export interface RoutingMetrics {
  watchboardEntries: Count;
  watchboardDigests: Count;
  watchboardRotations: Count;
  watchboardReattached: Count;
  triageRegressed: Count;
  crossSourceFollowups: Count;
}

const cache = new WeakMap<WatcherMetrics, RoutingMetrics>();

/** The routing counters of one watcher's metrics (the same ones on every call). */
export function routingMetrics(metrics: WatcherMetrics, cluster: string): RoutingMetrics {
  const known = cache.get(metrics);
  if (known) return known;
  const counter = (name: string, help: string): Count => {
    const count = metrics.registry.counter(`watcher_${name}`, help);
    return (labels = {}, by = 1) => count({ cluster, ...labels }, by);
  };
  const made: RoutingMetrics = {
    watchboardEntries: counter("watchboard_entries_total", "warnings buffered for a watchboard digest, by kind"),
    watchboardDigests: counter("watchboard_digests_total", "watchboard digests delivered"),
    watchboardRotations: counter("watchboard_rotations_total", "watchboard sessions rotated to a successor"),
    watchboardReattached: counter(
      "watchboard_reattached_total",
      "warnings joined to a critical incident sharing their ancestor instead of the board, by kind",
    ),
    triageRegressed: counter("triage_regressed_total", "recurrences opened with triage.regressed"),
    crossSourceFollowups: counter(
      "cross_source_followups_total",
      "family.member follow-ups, by the joining source family",
    ),
  };
  cache.set(metrics, made);
  return made;
}
