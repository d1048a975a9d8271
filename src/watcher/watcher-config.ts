/**
 * The watcher's configuration as the watcher sees it: the typed `WatcherConfig` every part of
 * src/watcher reads, and the source names `--sources` knows. The cli builds it from flags
 * (src/cli/watcher-config.ts); the watcher defines it, so it imports nothing from the cli.
 */
import type { FlagValue } from "../config/flag-spec.ts";
import type { LogLevel } from "../telemetry/logger.ts";
import type { FilterSettings } from "./core/filter.ts";
import type { Severity } from "./core/signal.ts";

/** Every source name `--sources` knows (docs/flags.md#spar-watcher-watch; D21). */
export const KNOWN_SOURCES = [
  "cluster-events",
  "object-state",
  "rollout",
  "workload",
  "autoscaling",
  "saturation",
  "degradation",
  "expiry",
  "capacity",
  "ingress",
  "gateway",
  "topology-drift",
  "compute-class",
  "quota",
  "notifications",
  "token-burn",
] as const;
export type SourceName = (typeof KNOWN_SOURCES)[number];

/** Sources `auto` never turns on. */
export const EXPLICIT_ONLY_SOURCES: readonly SourceName[] = ["quota", "notifications", "token-burn"];

export type StormSetting = "auto" | "on" | "off";

export interface ClusterTarget {
  name: string;
  endpoint: string;
}

export interface WatcherConfig {
  sink: "daemon" | "webhook";
  dryRun: boolean;
  daemonUrl: string | undefined;
  tokenEnv: string | undefined;
  owner: string | undefined;
  mode: "per-incident" | "shared";
  targetSession: string | undefined;
  sinkUrl: string | undefined;
  sinkTokenEnv: string | undefined;
  clusterName: string;
  project: string | undefined;
  region: string | undefined;
  zone: string;
  inCluster: boolean | undefined;
  kubeconfig: string | undefined;
  clusters: ClusterTarget[];
  clustersFrom: string | undefined;
  filter: FilterSettings;
  /** `auto`, or the explicit list. */
  sources: { auto: boolean; names: SourceName[] };
  severityOverrides: Map<string, Severity>;
  dedupWindowMs: number;
  dedupPersist: string | undefined;
  snapshotIntervalMs: number;
  accessRecheckMs: number;
  recoveryStableForMs: number;
  triageRegressFactor: number;
  enrich: {
    level: "critical" | "warning" | "off";
    capBytes: number;
    lists: { all: boolean; include: string[]; exclude: string[] };
    preflight: boolean;
    logLines: number;
    timeoutMs: number;
  };
  injectMaxBytes: number;
  /** Where per-incident warnings go (D418): entries per digest, longest wait, digests per session. */
  watchboard: { batch: number; flushMs: number; rotate: number };
  storm: {
    setting: StormSetting;
    min: number;
    windowMs: number;
    clusterFallback: boolean;
    mine: boolean;
    mineMin: number;
  };
  store: string | undefined;
  storeMaxBytes: number;
  storeTtlMs: number;
  /** `--distill-interval`: facts distilled from the store this often; 0 disables (D424). */
  distillIntervalMs: number;
  /** `--graph-snapshot-interval`: the topology graph saved into the store this often (D425). */
  graphSnapshotIntervalMs: number;
  metricsAddr: string | undefined;
  /** Extra Host names the probe listener answers (`--metrics-allowed-hosts`). */
  metricsAllowedHosts: string[];
  logLevel: LogLevel;
  /** Every flag's effective value, for the source-tuning flags without a typed field yet. */
  values: Map<string, FlagValue>;
  /** Loud startup notes that are not refusals (plain http webhook). */
  warnings: string[];
}

/**
 * The failure domain (D436): `--zone` for a zonal cluster, else `--region`, else none. It is the
 * zone the payloads carry and the one that enters the signal fingerprint.
 */
export function failureDomain(zone: string, region: string | undefined): string {
  return zone !== "" ? zone : (region ?? "");
}
