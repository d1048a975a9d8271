/**
 * What telemetry a role runs, resolved once at start from the standard OpenTelemetry environment
 * variables and the role's own settings (`--otel-endpoint` / `otel.endpoint`, the watcher's
 * `--otel-exporter`): the span exporter, the OTLP URLs and protocol, the resource, the sampler,
 * the batching and the metric export interval. Pure: it reads only the environment it is handed.
 *
 * Nothing configured (no endpoint anywhere, no exporter chosen) or `OTEL_SDK_DISABLED=true`: no
 * plan, so no SDK object is ever made. The environment wins over the flag and the config key
 * (docs/telemetry.md#settings, for every role). A bad environment value is a warning and its
 * default, never a refusal (OpenTelemetry's rule for environment configuration).
 */

export type TelemetryRole = "agent" | "svc" | "watcher";
export type SpanExporterKind = "none" | "console" | "otlp";
export type OtlpProtocol = "http/protobuf" | "http/json";
type Environment = Readonly<Record<string, string | undefined>>;

/** The role's own settings (flags and config keys), already validated by its flag table. */
export interface TelemetrySettings {
  /** OTLP/HTTP base URL (`/v1/traces` and `/v1/metrics` are appended). */
  endpoint?: string | undefined;
  /** The watcher's `--otel-exporter`, when given on the command line. */
  exporter?: SpanExporterKind | undefined;
}

export interface SamplerPlan {
  root: "always_on" | "always_off" | "traceidratio";
  /** Follow a sampled/unsampled parent (the `parentbased_*` samplers). */
  parentBased: boolean;
  ratio: number;
}

export interface OtlpTarget {
  url: string;
  protocol: OtlpProtocol;
}

export interface TelemetryPlan {
  traces: { exporter: "console" } | ({ exporter: "otlp" } & OtlpTarget) | undefined;
  metrics: (OtlpTarget & { intervalMs: number; timeoutMs: number }) | undefined;
  resource: Record<string, string>;
  sampler: SamplerPlan;
  batch: {
    scheduledDelayMillis: number;
    maxQueueSize: number;
    maxExportBatchSize: number;
    exportTimeoutMillis: number;
  };
}

/** The collector OTLP/HTTP listens on by default (OpenTelemetry's default endpoint). */
export const DEFAULT_OTLP_ENDPOINT = "http://localhost:4318";

export const SERVICE_NAMES: Readonly<Record<TelemetryRole, string>> = {
  agent: "spar-agent",
  svc: "spar-svc",
  watcher: "spar-watcher",
};

/** The plan, or undefined when telemetry is off. `warn` hears each ignored environment value. */
export function resolveTelemetryPlan(
  role: TelemetryRole,
  settings: TelemetrySettings,
  env: Environment,
  identity: { version: string; instanceId: string },
  warn: (message: string) => void,
): TelemetryPlan | undefined {
  if (value(env, "OTEL_SDK_DISABLED")?.toLowerCase() === "true") return undefined;
  const base = baseEndpoint(settings, env, warn);
  const tracesUrl = signalUrl(env, "TRACES", "v1/traces", base, warn);
  const metricsUrl = signalUrl(env, "METRICS", "v1/metrics", base, warn);
  const chosen = spanExporter(env, warn) ?? settings.exporter;
  const spans: SpanExporterKind = chosen ?? (tracesUrl.configured ? "otlp" : "none");
  const metricsOn = metricsExporter(env, warn) ?? (metricsUrl.configured || chosen === "otlp");
  if (spans === "none" && !metricsOn) return undefined;
  return {
    traces:
      spans === "none"
        ? undefined
        : spans === "console"
          ? { exporter: "console" }
          : { exporter: "otlp", url: tracesUrl.url, protocol: protocol(env, "TRACES", warn) },
    metrics: metricsOn
      ? { url: metricsUrl.url, protocol: protocol(env, "METRICS", warn), ...metricTiming(env, warn) }
      : undefined,
    resource: resourceAttributes(role, env, identity, warn),
    sampler: sampler(env, warn),
    batch: {
      scheduledDelayMillis: count(env, "OTEL_BSP_SCHEDULE_DELAY", 5000, warn),
      maxQueueSize: count(env, "OTEL_BSP_MAX_QUEUE_SIZE", 2048, warn),
      maxExportBatchSize: count(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512, warn),
      exportTimeoutMillis: count(env, "OTEL_BSP_EXPORT_TIMEOUT", 30_000, warn),
    },
  };
}

/** An http(s) URL, else an error naming what is wrong (the flag table's check and the env's). */
export function checkOtlpUrl(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `${JSON.stringify(text)} is not a URL (write it as http://collector:4318)`;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    return `${JSON.stringify(text)} must be an http:// or https:// URL (OTLP over HTTP)`;
  return undefined;
}

function value(env: Environment, name: string): string | undefined {
  const text = env[name]?.trim();
  return text === undefined || text === "" ? undefined : text;
}

/** OTEL_EXPORTER_OTLP_ENDPOINT, else the role's setting; undefined when neither is set (or valid). */
function baseEndpoint(settings: TelemetrySettings, env: Environment, warn: (message: string) => void) {
  const fromEnv = value(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
  if (fromEnv !== undefined) {
    const problem = checkOtlpUrl(fromEnv);
    if (problem === undefined) return fromEnv;
    warn(`OTEL_EXPORTER_OTLP_ENDPOINT ignored: ${problem}`);
  }
  return settings.endpoint;
}

/** The signal's own variable as is, else the base with the signal's path appended (the OTLP rule). */
function signalUrl(
  env: Environment,
  signal: "TRACES" | "METRICS",
  path: string,
  base: string | undefined,
  warn: (message: string) => void,
): { url: string; configured: boolean } {
  const name = `OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`;
  const own = value(env, name);
  if (own !== undefined) {
    const problem = checkOtlpUrl(own);
    if (problem === undefined) return { url: own, configured: true };
    warn(`${name} ignored: ${problem}`);
  }
  const root = base ?? DEFAULT_OTLP_ENDPOINT;
  return { url: `${root}${root.endsWith("/") ? "" : "/"}${path}`, configured: base !== undefined };
}

/** OTEL_TRACES_EXPORTER: the first of otlp/console/none it lists; others are warned about. */
function spanExporter(env: Environment, warn: (message: string) => void): SpanExporterKind | undefined {
  const listed = value(env, "OTEL_TRACES_EXPORTER");
  if (listed === undefined) return undefined;
  const names = listed.split(",").map((name) => name.trim().toLowerCase());
  const known = names.find((name): name is SpanExporterKind => ["otlp", "console", "none"].includes(name));
  const unknown = names.filter((name) => !["otlp", "console", "none", ""].includes(name));
  if (unknown.length > 0) warn(`OTEL_TRACES_EXPORTER: ${unknown.join(", ")} not supported (otlp, console, none)`);
  return known ?? "none";
}

/** OTEL_METRICS_EXPORTER: otlp on, none (or prometheus: /metrics serves it already) off. */
function metricsExporter(env: Environment, warn: (message: string) => void): boolean | undefined {
  const listed = value(env, "OTEL_METRICS_EXPORTER");
  if (listed === undefined) return undefined;
  const names = listed.split(",").map((name) => name.trim().toLowerCase());
  const unknown = names.filter((name) => !["otlp", "none", "prometheus", ""].includes(name));
  if (unknown.length > 0)
    warn(`OTEL_METRICS_EXPORTER: ${unknown.join(", ")} not supported (otlp, none; /metrics serves Prometheus)`);
  return names.includes("otlp");
}

function protocol(env: Environment, signal: "TRACES" | "METRICS", warn: (message: string) => void): OtlpProtocol {
  const own = `OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`;
  const name = value(env, own) !== undefined ? own : "OTEL_EXPORTER_OTLP_PROTOCOL";
  const text = value(env, name);
  if (text === undefined || text === "http/protobuf" || text === "http/json") return text ?? "http/protobuf";
  warn(`${name}=${text} not supported (http/protobuf, http/json; no gRPC): using http/protobuf`);
  return "http/protobuf";
}

function sampler(env: Environment, warn: (message: string) => void): SamplerPlan {
  const name = value(env, "OTEL_TRACES_SAMPLER")?.toLowerCase() ?? "parentbased_always_on";
  const parentBased = name.startsWith("parentbased_");
  const root = parentBased ? name.slice("parentbased_".length) : name;
  if (root !== "always_on" && root !== "always_off" && root !== "traceidratio") {
    warn(`OTEL_TRACES_SAMPLER=${name} not supported: using parentbased_always_on`);
    return { root: "always_on", parentBased: true, ratio: 1 };
  }
  return { root, parentBased, ratio: root === "traceidratio" ? ratio(env, warn) : 1 };
}

function ratio(env: Environment, warn: (message: string) => void): number {
  const text = value(env, "OTEL_TRACES_SAMPLER_ARG");
  if (text === undefined) return 1;
  const parsed = Number(text);
  if (Number.isFinite(parsed) && parsed >= 0 && parsed <= 1) return parsed;
  warn(`OTEL_TRACES_SAMPLER_ARG=${text} must be a number from 0 to 1: using 1`);
  return 1;
}

/** A non-negative integer variable, else its default. */
function count(env: Environment, name: string, fallback: number, warn: (message: string) => void): number {
  const text = value(env, name);
  if (text === undefined) return fallback;
  const parsed = Number(text);
  if (Number.isInteger(parsed) && parsed >= 0) return parsed;
  warn(`${name}=${text} must be a whole number: using ${fallback}`);
  return fallback;
}

/** The export interval and timeout; the timeout never exceeds the interval (the reader refuses that). */
function metricTiming(env: Environment, warn: (message: string) => void) {
  const intervalMs = Math.max(1, count(env, "OTEL_METRIC_EXPORT_INTERVAL", 60_000, warn));
  return { intervalMs, timeoutMs: Math.min(intervalMs, count(env, "OTEL_METRIC_EXPORT_TIMEOUT", 30_000, warn)) };
}

/**
 * OTEL_RESOURCE_ATTRIBUTES (`key=value,...`, values percent-decoded), then the role's defaults
 * where it is silent: service.name (OTEL_SERVICE_NAME first), service.version, service.instance.id.
 */
function resourceAttributes(
  role: TelemetryRole,
  env: Environment,
  identity: { version: string; instanceId: string },
  warn: (message: string) => void,
): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (const entry of (value(env, "OTEL_RESOURCE_ATTRIBUTES") ?? "").split(",")) {
    if (entry.trim() === "") continue;
    const at = entry.indexOf("=");
    const key = at > 0 ? entry.slice(0, at).trim() : "";
    try {
      if (key === "") throw new Error("no key");
      attributes[key] = decodeURIComponent(entry.slice(at + 1).trim());
    } catch {
      warn(`OTEL_RESOURCE_ATTRIBUTES: ignoring ${JSON.stringify(entry)} (write key=value, the value percent-encoded)`);
    }
  }
  return {
    ...attributes,
    "service.name": value(env, "OTEL_SERVICE_NAME") ?? attributes["service.name"] ?? SERVICE_NAMES[role],
    "service.version": attributes["service.version"] ?? identity.version,
    "service.instance.id": attributes["service.instance.id"] ?? identity.instanceId,
  };
}
