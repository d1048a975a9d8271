/**
 * The flag table of `spar watcher watch` (spec "Flags of watcher watch"): names, types, defaults
 * in the spec's own notation, and bounds. Core flags are frozen (pinned by
 * test/unit/watcher/watcher-flags.test.ts); removing or renaming one is a breaking change.
 * Parsing and validation live in watcher-config.ts; this module is data only.
 */

import { MAX_TIMER_MS } from "../core/duration.ts";

export type WatcherFlagKind = "string" | "bool" | "int" | "float" | "duration" | "repeatable";

/** Bounds of a numeric flag (durations in milliseconds). `zeroOk` admits 0 beside the range. */
export interface Bounds {
  min?: number;
  /** Strictly above. */
  above?: number;
  max?: number;
  /** Strictly below. */
  below?: number;
  zeroOk?: boolean;
}

export interface WatcherFlag {
  name: string;
  kind: WatcherFlagKind;
  /** Default in the spec's notation (parsed by the same code as a flag value); undefined: none. */
  defaultValue?: string;
  /** Shown in help when the default is not a literal value (`auto`, `--daemon-url`). */
  defaultText?: string;
  help: string;
  bounds?: Bounds;
  /** Allowed string values. */
  choices?: readonly string[];
  /** Part of the frozen core surface. */
  core?: true;
}

const ABOVE_0 = { above: 0 } as const;
/** Durations that drive a timer: at most the longest delay a timer holds (MAX_TIMER_MS). */
const TIMER = { above: 0, max: MAX_TIMER_MS } as const;
const TIMER_OR_OFF = { max: MAX_TIMER_MS } as const;
const AT_LEAST_1 = { min: 1 } as const;

export const WATCHER_FLAGS: readonly WatcherFlag[] = [
  // Sink and identity.
  {
    name: "daemon-url",
    kind: "string",
    help: "base URL of the agent daemon (http or https, no trailing slash); required for the daemon sink unless --dry-run",
    core: true,
  },
  {
    name: "token-env",
    kind: "string",
    help: "environment variable holding the daemon bearer token; required for the daemon sink unless --dry-run",
    core: true,
  },
  {
    name: "owner",
    kind: "string",
    help: "X-Asserted-Caller on POST /sessions in per-incident mode (the watcher must be a proxy identity of the daemon)",
    core: true,
  },
  {
    name: "mode",
    kind: "string",
    defaultValue: "per-incident",
    choices: ["per-incident", "shared"],
    help: "per-incident (one session per (uid, reason)) or shared (every inject into --target-session)",
    core: true,
  },
  { name: "target-session", kind: "string", help: "the session of --mode=shared", core: true },
  {
    name: "sink",
    kind: "string",
    defaultValue: "daemon",
    choices: ["daemon", "webhook"],
    help: "daemon (POST /sessions and inject) or webhook (incident receiver v1)",
    core: true,
  },
  {
    name: "sink-url",
    kind: "string",
    help: "webhook receiver base URL, no trailing slash; required with --sink=webhook (plain http warns)",
    core: true,
  },
  {
    name: "sink-token-env",
    kind: "string",
    help: "environment variable with the webhook bearer token; only with --sink=webhook",
    core: true,
  },
  {
    name: "dry-run",
    kind: "bool",
    defaultValue: "false",
    help: "watch for real but print payloads to stdout instead of calling the sink",
    core: true,
  },
  { name: "cluster-name", kind: "string", help: "cluster name stamped into every payload", core: true },
  { name: "project", kind: "string", help: "cloud project stamped into payloads" },
  { name: "region", kind: "string", help: "region stamped into payloads" },
  { name: "zone", kind: "string", help: "zone of a zonal cluster; the failure domain enters the signal fingerprint" },
  // Cluster access.
  {
    name: "clusters",
    kind: "string",
    help: "multi-cluster: comma-separated name=endpoint pairs; exclusive with --clusters-from",
  },
  {
    name: "clusters-from",
    kind: "string",
    help: "discover clusters: project, project/location, kubeconfig or kubeconfig:<path>; exclusive with --clusters",
  },
  {
    name: "in-cluster",
    kind: "bool",
    defaultText: "auto (in a pod)",
    help: "use in-cluster service credentials",
    core: true,
  },
  {
    name: "kubeconfig",
    kind: "string",
    help: "kubeconfig path outside a pod (default: KUBECONFIG, then ~/.kube/config)",
    core: true,
  },
  // Filter.
  {
    name: "namespace",
    kind: "string",
    defaultText: "all",
    help: "comma-separated allow-list; a post-watch output filter, not a watch scope",
    core: true,
  },
  {
    name: "exclude-namespace",
    kind: "string",
    help: "comma-separated deny-list; scopes the watch with a field selector",
    core: true,
  },
  {
    name: "reason",
    kind: "string",
    defaultText: "the shipped default set",
    help: "comma-separated allow-list of event reasons",
    core: true,
  },
  { name: "sources", kind: "string", defaultValue: "auto", help: "comma-separated sources or auto", core: true },
  {
    name: "severity",
    kind: "repeatable",
    help: "per-kind severity override kind=level[,kind=level...] (critical, warning, info); repeatable, each kind once",
    core: true,
  },
  // Dedup.
  {
    name: "dedup-window",
    kind: "duration",
    defaultValue: "5m0s",
    help: "rolling window of (uid, reason) dedup",
    core: true,
  },
  { name: "dedup-persist", kind: "string", help: "file that keeps the dedup cache across restarts", core: true },
  {
    name: "snapshot-interval",
    kind: "duration",
    defaultValue: "30s",
    bounds: TIMER_OR_OFF,
    help: "dedup persist interval; 0: only on shutdown",
    core: true,
  },
  {
    name: "backoff-min-count",
    kind: "int",
    defaultValue: "3",
    bounds: AT_LEAST_1,
    help: "event count a crash-loop back-off must reach; 1 fires on the first",
    core: true,
  },
  {
    name: "imagepull-transient-min-count",
    kind: "int",
    defaultValue: "3",
    bounds: AT_LEAST_1,
    help: "same for retryable image-pull causes; terminal or unknown causes fire at once",
    core: true,
  },
  {
    name: "unhealthy-min-count",
    kind: "int",
    defaultValue: "3",
    bounds: AT_LEAST_1,
    help: "consecutive Unhealthy events required",
    core: true,
  },
  {
    name: "access-recheck",
    kind: "duration",
    defaultValue: "2m0s",
    bounds: TIMER_OR_OFF,
    help: "access re-check sweep; a denial must repeat over two sweeps; 0 disables",
    core: true,
  },
  {
    name: "recovery-stable-for",
    kind: "duration",
    defaultValue: "5m0s",
    help: "how long a cleared symptom must stay clear before resolved; 0 disables tracking",
    core: true,
  },
  {
    name: "triage-regress-factor",
    kind: "int",
    defaultValue: "3",
    bounds: { min: 2, zeroOk: true },
    help: "at least 2; 0 disables",
    core: true,
  },
  // Enrichment and payload size.
  {
    name: "enrich",
    kind: "string",
    defaultValue: "critical",
    choices: ["critical", "warning", "off"],
    help: "critical, warning (critical plus warning) or off",
    core: true,
  },
  {
    name: "enrich-cap",
    kind: "int",
    defaultValue: "4096",
    bounds: AT_LEAST_1,
    help: "byte budget of the enrichment bundle; cut at section boundaries",
    core: true,
  },
  {
    name: "enrich-lists",
    kind: "string",
    defaultValue: "all",
    help: "all, an allow-list, or subtractions such as all,-secrets",
    core: true,
  },
  {
    name: "enrich-lists-preflight",
    kind: "bool",
    defaultValue: "false",
    help: "access-review each selected resource and drop denied ones first",
    core: true,
  },
  {
    name: "enrich-log-lines",
    kind: "int",
    defaultValue: "200",
    bounds: AT_LEAST_1,
    help: "log tail per container stream",
    core: true,
  },
  {
    name: "enrich-timeout",
    kind: "duration",
    defaultValue: "5s",
    bounds: TIMER,
    help: "hard budget of one enrichment run; on expiry the inject fires with trailers",
    core: true,
  },
  {
    name: "inject-max-bytes",
    kind: "int",
    defaultValue: "8192",
    bounds: AT_LEAST_1,
    help: "wire-body ceiling; shrinks enrichment, then message, never identity",
    core: true,
  },
  // Watchboard.
  {
    name: "watchboard-batch",
    kind: "int",
    defaultValue: "5",
    bounds: AT_LEAST_1,
    help: "buffered warnings that trigger a digest flush",
  },
  {
    name: "watchboard-flush",
    kind: "duration",
    defaultValue: "1m0s",
    bounds: TIMER,
    help: "maximum age of a buffered warning",
  },
  {
    name: "watchboard-rotate",
    kind: "int",
    defaultValue: "200",
    bounds: AT_LEAST_1,
    help: "digest injects per watchboard session before rotation",
  },
  // Storms.
  {
    name: "storm",
    kind: "string",
    defaultValue: "auto",
    choices: ["auto", "on", "off", "true", "false"],
    help: "auto (probe pods, nodes, replicasets grants), on (a missing grant is fatal) or off; true/false are aliases",
    core: true,
  },
  {
    name: "storm-min",
    kind: "int",
    defaultValue: "3",
    bounds: { min: 2 },
    help: "incidents sharing a blast-radius key that form a storm",
    core: true,
  },
  {
    name: "storm-window",
    kind: "duration",
    defaultValue: "1m0s",
    help: "storm formation window; 0 disables correlation",
    core: true,
  },
  {
    name: "storm-cluster-fallback",
    kind: "bool",
    defaultValue: "true",
    help: "group simultaneous zone-less node failures under the cluster; needs storm on",
    core: true,
  },
  {
    name: "storm-mine",
    kind: "bool",
    defaultValue: "false",
    help: "also correlate on mined keys (image, node, container); needs storm on",
    core: true,
  },
  {
    name: "storm-mine-min",
    kind: "int",
    defaultValue: "0",
    defaultText: "0 (auto: the larger of 5 and --storm-min)",
    help: "threshold of mined keys; explicit values at least --storm-min",
    core: true,
  },
  // Store and operations.
  { name: "store", kind: "string", help: "occurrence store path (sqlite)", core: true },
  {
    name: "store-max-mb",
    kind: "int",
    defaultValue: "512",
    bounds: AT_LEAST_1,
    help: "size bound of each store; oldest pruned first",
    core: true,
  },
  {
    name: "store-ttl",
    kind: "duration",
    defaultValue: "720h0m0s",
    bounds: ABOVE_0,
    help: "retention of the occurrence store",
    core: true,
  },
  {
    name: "distill-interval",
    kind: "duration",
    defaultValue: "6h0m0s",
    bounds: TIMER_OR_OFF,
    help: "durable-memory distillation (needs --store); 0 disables",
  },
  {
    name: "graph-snapshot-interval",
    kind: "duration",
    defaultValue: "5m0s",
    bounds: TIMER,
    help: "topology snapshot persistence (needs store and storm)",
  },
  {
    name: "metrics-addr",
    kind: "string",
    help: "host:port for /metrics, /healthz and /readyz; empty disables",
    core: true,
  },
  {
    name: "metrics-allowed-hosts",
    kind: "string",
    help: "host names (or *.domain) the probe listener answers besides loopback names and address literals, comma-separated (DNS-rebinding guard)",
  },
  {
    name: "log-level",
    kind: "string",
    defaultValue: "info",
    choices: ["debug", "info", "warn", "error"],
    help: "debug, info, warn or error",
    core: true,
  },
  {
    name: "otel-exporter",
    kind: "string",
    defaultValue: "none",
    choices: ["none", "console", "otlp"],
    help: "none, console or otlp; OTEL_TRACES_EXPORTER overrides",
  },
  // Token burn.
  {
    name: "burn-eta",
    kind: "duration",
    defaultValue: "30m0s",
    bounds: ABOVE_0,
    help: "budget exhaustion horizon of token-burn",
  },
  {
    name: "burn-multiple",
    kind: "float",
    defaultValue: "4",
    bounds: { above: 1 },
    help: "rate multiple of the median session that is a burn",
  },
  {
    name: "token-budget-usd",
    kind: "float",
    defaultValue: "0",
    bounds: { min: 0 },
    help: "per-session spend budget; 0 disarms",
  },
  {
    name: "token-endpoint",
    kind: "string",
    defaultText: "--daemon-url",
    help: "base URL of the cost stack, no trailing slash",
  },
  { name: "token-poll", kind: "duration", defaultValue: "1m0s", bounds: TIMER, help: "token-burn poll interval" },
  // Other sources.
  { name: "capacity-poll", kind: "duration", defaultValue: "1m0s", bounds: TIMER, help: "capacity poll interval" },
  {
    name: "pending-age",
    kind: "duration",
    defaultValue: "5m0s",
    bounds: ABOVE_0,
    help: "Pending/Unschedulable age before a warning",
  },
  {
    name: "degradation-drop",
    kind: "float",
    defaultValue: "0.3",
    bounds: { above: 0, max: 1 },
    help: "ready-ratio drop that is a degradation, in (0, 1]",
  },
  {
    name: "degradation-window",
    kind: "duration",
    defaultValue: "15m0s",
    bounds: ABOVE_0,
    help: "degradation observation window",
  },
  {
    name: "saturation-interval",
    kind: "duration",
    defaultValue: "30s",
    bounds: TIMER,
    help: "saturation sample interval",
  },
  {
    name: "saturation-warn",
    kind: "duration",
    defaultValue: "1h0m0s",
    bounds: ABOVE_0,
    help: "forecast ETA for a warning (critical below 15m)",
  },
  {
    name: "saturation-window",
    kind: "duration",
    defaultValue: "1h30m0s",
    bounds: ABOVE_0,
    help: "saturation regression window",
  },
  { name: "expiry-interval", kind: "duration", defaultValue: "1h0m0s", bounds: TIMER, help: "expiry scan interval" },
  { name: "expiry-namespaces", kind: "string", defaultValue: "all", help: "namespaces of the sensitive-list scan" },
  {
    name: "expiry-warn",
    kind: "duration",
    defaultValue: "336h0m0s",
    bounds: { min: 72 * 3_600_000 },
    help: "expiry warning horizon; at least 72h (critical at 72h)",
  },
  {
    name: "gateway-grace",
    kind: "duration",
    defaultValue: "5m0s",
    bounds: ABOVE_0,
    help: "how long a gateway condition must stay failed",
  },
  {
    name: "rollout-observe",
    kind: "duration",
    defaultValue: "3m0s",
    bounds: ABOVE_0,
    help: "zero ready-count progress time before a rollout stall",
  },
  { name: "quota-poll", kind: "duration", defaultValue: "15m0s", bounds: TIMER, help: "quota poll interval" },
  {
    name: "quota-warn",
    kind: "float",
    defaultValue: "0.8",
    bounds: { above: 0, below: 1 },
    help: "usage ratio that is watched, in (0, 1)",
  },
  { name: "quota-window", kind: "duration", defaultValue: "168h0m0s", bounds: ABOVE_0, help: "quota history window" },
  {
    name: "notifications-subscription",
    kind: "string",
    help: "message-queue subscription; required when the notifications source is enabled",
  },
  {
    name: "compute-class-dwell",
    kind: "duration",
    defaultValue: "10m0s",
    bounds: ABOVE_0,
    help: "compute-class finding dwell",
  },
  {
    name: "compute-class-infer",
    kind: "bool",
    defaultValue: "true",
    help: "cross-check the provider's priority annotation",
  },
  {
    name: "compute-class-last-rank-ceiling",
    kind: "float",
    defaultValue: "0.9",
    bounds: { min: 0, max: 1 },
    help: "0 turns the rule off",
  },
  { name: "compute-class-rank0-floor", kind: "float", defaultValue: "0", bounds: { min: 0, max: 1 }, help: "0 is off" },
  {
    name: "compute-class-tier-c-signals",
    kind: "bool",
    defaultValue: "false",
    help: "put the unused-priority finding on the wire",
  },
  {
    name: "compute-class-window",
    kind: "duration",
    defaultValue: "1h0m0s",
    bounds: ABOVE_0,
    help: "compute-class observation window",
  },
  { name: "topology-dwell", kind: "duration", defaultValue: "10m0s", help: "topology finding dwell" },
  {
    name: "topology-keys",
    kind: "string",
    defaultText: "standard zone and region labels",
    help: "node labels treated as axes, in precedence order",
  },
  {
    name: "topology-domain-unavailable-keys",
    kind: "string",
    defaultText: "zone, region",
    help: "axes on which an unusable domain raises a finding; empty turns it off",
  },
  { name: "topology-baseline-band", kind: "float", defaultValue: "4", bounds: ABOVE_0, help: "baseline band width" },
  {
    name: "topology-baseline-half-life",
    kind: "duration",
    defaultValue: "12h0m0s",
    bounds: ABOVE_0,
    help: "baseline half-life",
  },
  { name: "topology-capacity-ratio", kind: "float", defaultValue: "1.25", bounds: ABOVE_0, help: "capacity ratio" },
  {
    name: "topology-cluster-defaults",
    kind: "string",
    defaultText: "unset (upstream defaults)",
    help: "key=maxSkew[:DoNotSchedule|ScheduleAnyway] list, or none",
  },
  { name: "topology-learn-baselines", kind: "bool", defaultValue: "true", help: "learn per-domain baselines" },
  {
    name: "topology-max-node-groups",
    kind: "int",
    defaultValue: "200",
    help: "node groups tracked; negative turns node-group subjects off",
  },
  {
    name: "topology-node-group-keys",
    kind: "string",
    defaultText: "built-in provider node-group labels",
    help: "node-group labels; first match wins",
  },
  {
    name: "topology-per-domain-collapse-states",
    kind: "bool",
    defaultValue: "true",
    help: "fold four scheduling states to active and waiting",
  },
  { name: "topology-per-domain-exclude-namespaces", kind: "string", help: "applied before the include list" },
  { name: "topology-per-domain-max-keys", kind: "int", defaultValue: "4", help: "negative means no cap" },
  {
    name: "topology-per-domain-min-drift",
    kind: "float",
    defaultValue: "0.05",
    help: "negative means every scored subject",
  },
  { name: "topology-per-domain-namespaces", kind: "string", defaultText: "all", help: "namespaces scored per domain" },
  {
    name: "topology-per-domain-series",
    kind: "bool",
    defaultValue: "false",
    help: "export per-domain series for every subject",
  },
  {
    name: "topology-tier-c-signals",
    kind: "bool",
    defaultValue: "false",
    help: "put undeclared-intent drift findings on the wire",
  },
];
