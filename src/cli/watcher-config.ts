/**
 * Builds the typed configuration of `spar watcher watch` (src/watcher/watcher-config.ts) once from
 * the parsed flags, with every startup refusal of docs/watcher.md#startup-refusals that needs no
 * cluster access (the grant-dependent ones are in src/watcher/access-plan.ts). A refusal is an
 * error naming the flag.
 */
import { type Result, err, ok } from "../core/result.ts";
import type { LogLevel } from "../telemetry/logger.ts";
import { DEFAULT_REASONS } from "../watcher/core/reasons.ts";
import { SEVERITIES, type Severity } from "../watcher/core/signal.ts";
import { parseListenAddress } from "../config/listen-address.ts";
import { parseAllowedHosts } from "../surfaces/http/host-allowlist.ts";
import { type WatcherArgs, parseWatcherArgs } from "./watcher-args.ts";
import {
  type ClusterTarget,
  EXPLICIT_ONLY_SOURCES,
  KNOWN_SOURCES,
  type SourceName,
  type StormSetting,
  type WatcherConfig,
} from "../watcher/watcher-config.ts";

class Refusal extends Error {}

function refuse(message: string): never {
  throw new Refusal(message);
}

function csv(text: string | undefined): string[] {
  return (text ?? "")
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

function baseUrl(flag: string, value: string | undefined): string | undefined {
  if (value === undefined || value === "") return undefined;
  if (!/^https?:\/\/[^/\s]+/i.test(value))
    refuse(`--${flag} must be an http:// or https:// URL, got ${JSON.stringify(value)}`);
  if (value.endsWith("/")) refuse(`--${flag} must not end in "/": ${JSON.stringify(value)}`);
  return value;
}

function parseSeverity(values: readonly string[]): Map<string, Severity> {
  const overrides = new Map<string, Severity>();
  for (const pair of values.flatMap((value) => value.split(","))) {
    const [kind, level, extra] = pair.split("=").map((part) => part.trim());
    if (!kind || !level || extra !== undefined)
      refuse(`--severity takes kind=level pairs, got ${JSON.stringify(pair)}`);
    if (!SEVERITIES.includes(level as Severity))
      refuse(`--severity ${kind}: level must be critical, warning or info, got ${JSON.stringify(level)}`);
    if (overrides.has(kind)) refuse(`--severity names ${kind} more than once`);
    overrides.set(kind, level as Severity);
  }
  return overrides;
}

function parseSources(text: string): { auto: boolean; names: SourceName[] } {
  const names = csv(text);
  if (names.length === 0) refuse("--sources must name at least one source, or auto");
  if (names.includes("auto")) {
    if (names.length > 1) refuse("--sources=auto must be the only value");
    return { auto: true, names: KNOWN_SOURCES.filter((name) => !EXPLICIT_ONLY_SOURCES.includes(name)) };
  }
  for (const name of names)
    if (!(KNOWN_SOURCES as readonly string[]).includes(name))
      refuse(`--sources: unknown source ${JSON.stringify(name)} (known: ${KNOWN_SOURCES.join(", ")})`);
  return { auto: false, names: [...new Set(names)] as SourceName[] };
}

function parseClusters(text: string | undefined): ClusterTarget[] {
  return csv(text).map((item) => {
    const eq = item.indexOf("=");
    const endpoint = eq === -1 ? item : item.slice(eq + 1).trim();
    const name = eq === -1 ? (endpoint.replace(/^[a-z]+:\/\//i, "").split(/[.:/]/)[0] ?? "") : item.slice(0, eq).trim();
    if (name === "" || endpoint === "") refuse(`--clusters: bad entry ${JSON.stringify(item)}; use name=endpoint`);
    return { name, endpoint };
  });
}

function parseEnrichLists(text: string): WatcherConfig["enrich"]["lists"] {
  const items = csv(text);
  if (items.length === 0) refuse("--enrich-lists must be all, a list, or subtractions such as all,-secrets");
  const all = items[0] === "all";
  const rest = all ? items.slice(1) : items;
  const exclude = rest.filter((item) => item.startsWith("-")).map((item) => item.slice(1));
  const include = rest.filter((item) => !item.startsWith("-"));
  if (all && include.length > 0)
    refuse(`--enrich-lists: after all only subtractions (-name) are allowed, got ${include.join(",")}`);
  if (!all && exclude.length > 0) refuse("--enrich-lists: subtractions need a leading all (all,-secrets)");
  if ([...include, ...exclude].some((item) => !/^[a-z0-9.-]+$/.test(item)))
    refuse(`--enrich-lists: bad resource name in ${JSON.stringify(text)}`);
  return { all, include, exclude };
}

function checkTopologyDefaults(text: string | undefined): void {
  if (text === undefined || text === "none") return;
  for (const item of csv(text)) {
    if (!/^[^=\s]+=[1-9]\d*(:(DoNotSchedule|ScheduleAnyway))?$/.test(item))
      refuse(
        `--topology-cluster-defaults: bad entry ${JSON.stringify(item)}; use key=maxSkew[:DoNotSchedule|ScheduleAnyway] or none`,
      );
  }
}

const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The `--topology-*` lists (D406): label keys (or zone, region, hostname) and namespace names. */
function checkTopologyLists(values: WatcherArgs["values"]): void {
  const given = (name: string) => {
    const value = values.get(name);
    return typeof value === "string" ? csv(value) : undefined;
  };
  const keys = given("topology-keys");
  if (keys !== undefined && keys.length === 0) refuse("--topology-keys needs at least one node label");
  for (const name of ["topology-keys", "topology-domain-unavailable-keys", "topology-node-group-keys"])
    for (const key of given(name) ?? [])
      if (!LABEL_KEY.test(key)) refuse(`--${name}: ${JSON.stringify(key)} is not a node label key`);
  for (const name of ["topology-per-domain-namespaces", "topology-per-domain-exclude-namespaces"])
    for (const namespace of given(name) ?? [])
      if (namespace !== "all" && !NAMESPACE.test(namespace))
        refuse(`--${name}: ${JSON.stringify(namespace)} is not a namespace name`);
}

function clustersFrom(text: string | undefined): string | undefined {
  if (text === undefined || text === "") return undefined;
  if (text === "kubeconfig" || text.startsWith("kubeconfig:") || /^[a-z][a-z0-9-]*(\/[a-z0-9-]+)?$/.test(text))
    return text;
  return refuse(
    `--clusters-from must be project, project/location, kubeconfig or kubeconfig:<path>, got ${JSON.stringify(text)}`,
  );
}

export function buildWatcherConfig(args: WatcherArgs): Result<WatcherConfig> {
  const { values, given } = args;
  const str = (name: string) => {
    const value = values.get(name);
    return typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;
  };
  const num = (name: string) => values.get(name) as number;
  const bool = (name: string) => values.get(name) === true;
  try {
    const dryRun = bool("dry-run");
    const sink = str("sink") as WatcherConfig["sink"];
    const mode = str("mode") as WatcherConfig["mode"];
    const daemonUrl = baseUrl("daemon-url", str("daemon-url"));
    const sinkUrl = baseUrl("sink-url", str("sink-url"));
    const warnings: string[] = [];
    if (sink === "daemon") {
      if (!dryRun && !daemonUrl) refuse("--daemon-url is required (the daemon sink needs it; or use --dry-run)");
      if (!dryRun && !str("token-env"))
        refuse("--token-env is required (the variable holding the daemon bearer token; or use --dry-run)");
      if (given.has("sink-url")) refuse("--sink-url is only valid with --sink=webhook");
      if (given.has("sink-token-env")) refuse("--sink-token-env is only valid with --sink=webhook");
    } else {
      if (!dryRun && !sinkUrl) refuse("--sink=webhook requires --sink-url");
      if (mode !== "per-incident") refuse("--sink=webhook supports only --mode=per-incident");
      if (given.has("target-session")) refuse("--target-session is not valid with --sink=webhook");
      if (given.has("owner")) refuse("--owner is not valid with --sink=webhook");
      if (sinkUrl?.startsWith("http://"))
        warnings.push(`--sink-url ${sinkUrl} is plain http: incident payloads and the bearer token travel unencrypted`);
    }
    if (mode === "shared" && !str("target-session")) refuse("--mode=shared requires --target-session");
    if (mode === "per-incident" && given.has("target-session"))
      refuse("--target-session is only valid with --mode=shared");
    if (given.has("clusters") && given.has("clusters-from"))
      refuse("--clusters and --clusters-from are mutually exclusive");
    const stormRaw = str("storm") ?? "auto";
    const storm: StormSetting = stormRaw === "true" ? "on" : stormRaw === "false" ? "off" : (stormRaw as StormSetting);
    if (storm === "off" && bool("storm-mine")) refuse("--storm-mine needs storm correlation on (--storm=auto or on)");
    if (storm === "off" && given.has("storm-cluster-fallback") && bool("storm-cluster-fallback"))
      refuse("--storm-cluster-fallback needs storm correlation on (--storm=auto or on)");
    // D428: the memory flags need the store (and storms) they serve; an explicit setting without them is refused.
    if (!str("store") && given.has("distill-interval") && num("distill-interval") > 0)
      refuse("--distill-interval needs --store (the facts are written into the occurrence store)");
    if (!str("store") && given.has("graph-snapshot-interval"))
      refuse("--graph-snapshot-interval needs --store (the snapshot is written into the occurrence store)");
    if (storm === "off" && given.has("graph-snapshot-interval"))
      refuse("--graph-snapshot-interval needs storm correlation on (--storm=auto or on)");
    const stormMin = num("storm-min");
    const mineMin = num("storm-mine-min");
    if (mineMin !== 0 && mineMin < stormMin)
      refuse(`--storm-mine-min=${mineMin} is out of range: must be at least --storm-min (${stormMin}), or 0 for auto`);
    if (mineMin < 0) refuse("--storm-mine-min must be 0 (auto) or at least --storm-min");
    const sources = parseSources(str("sources") ?? "auto");
    if (sources.names.includes("notifications") && !str("notifications-subscription"))
      refuse("the notifications source requires --notifications-subscription");
    if (sources.names.includes("notifications") && !str("notifications-token-env"))
      refuse(
        "the notifications source requires --notifications-token-env (the variable holding the bearer token its pushes carry)",
      );
    const notificationsAddr = str("notifications-addr");
    if (notificationsAddr && !parseListenAddress(notificationsAddr).ok)
      refuse(`--notifications-addr must be host:port (or :port), got ${JSON.stringify(notificationsAddr)}`);
    const metricsAddr = str("metrics-addr");
    if (metricsAddr && !parseListenAddress(metricsAddr).ok)
      refuse(`--metrics-addr must be host:port (or :port), got ${JSON.stringify(metricsAddr)}`);
    const metricsAllowedHosts = csv(str("metrics-allowed-hosts"));
    const hostCheck = parseAllowedHosts(metricsAllowedHosts, "--metrics-allowed-hosts");
    if (!hostCheck.ok) refuse(hostCheck.error);
    checkTopologyDefaults(str("topology-cluster-defaults"));
    checkTopologyLists(values);
    baseUrl("token-endpoint", str("token-endpoint"));
    const reasons = csv(str("reason"));
    const zone = str("zone") ?? "";
    return ok({
      sink,
      dryRun,
      daemonUrl,
      tokenEnv: str("token-env"),
      owner: str("owner"),
      mode,
      targetSession: str("target-session"),
      sinkUrl,
      sinkTokenEnv: str("sink-token-env"),
      clusterName: str("cluster-name") ?? "",
      project: str("project"),
      region: str("region"),
      zone,
      inCluster: values.has("in-cluster") ? bool("in-cluster") : undefined,
      kubeconfig: str("kubeconfig"),
      clusters: parseClusters(str("clusters")),
      clustersFrom: clustersFrom(str("clusters-from")),
      filter: {
        reasons: new Set(reasons.length > 0 ? reasons : DEFAULT_REASONS),
        allowNamespaces: new Set(csv(str("namespace"))),
        excludeNamespaces: new Set(csv(str("exclude-namespace"))),
        backoffMinCount: num("backoff-min-count"),
        imagePullTransientMinCount: num("imagepull-transient-min-count"),
        unhealthyMinCount: num("unhealthy-min-count"),
      },
      sources,
      severityOverrides: parseSeverity(args.severity),
      dedupWindowMs: num("dedup-window"),
      dedupPersist: str("dedup-persist"),
      snapshotIntervalMs: num("snapshot-interval"),
      accessRecheckMs: num("access-recheck"),
      recoveryStableForMs: num("recovery-stable-for"),
      triageRegressFactor: num("triage-regress-factor"),
      enrich: {
        level: str("enrich") as WatcherConfig["enrich"]["level"],
        capBytes: num("enrich-cap"),
        lists: parseEnrichLists(str("enrich-lists") ?? "all"),
        preflight: bool("enrich-lists-preflight"),
        logLines: num("enrich-log-lines"),
        timeoutMs: num("enrich-timeout"),
      },
      injectMaxBytes: num("inject-max-bytes"),
      watchboard: {
        batch: num("watchboard-batch"),
        flushMs: num("watchboard-flush"),
        rotate: num("watchboard-rotate"),
      },
      storm: {
        setting: storm,
        min: stormMin,
        windowMs: num("storm-window"),
        clusterFallback: bool("storm-cluster-fallback"),
        mine: bool("storm-mine"),
        mineMin,
      },
      store: str("store"),
      storeMaxBytes: num("store-max-mb") * 1024 * 1024,
      storeTtlMs: num("store-ttl"),
      distillIntervalMs: num("distill-interval"),
      graphSnapshotIntervalMs: num("graph-snapshot-interval"),
      metricsAddr,
      metricsAllowedHosts,
      logLevel: str("log-level") as LogLevel,
      values,
      warnings,
    });
  } catch (error) {
    if (error instanceof Refusal) return err(error.message);
    throw error;
  }
}

/** Parse and validate in one step (what the command and the tests call). */
export function watcherConfigFromArgv(argv: readonly string[]): Result<WatcherConfig> {
  const args = parseWatcherArgs(argv);
  if (!args.ok) return args;
  return buildWatcherConfig(args.value);
}
