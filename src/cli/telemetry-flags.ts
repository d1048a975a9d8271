/**
 * The telemetry setting every role shares: `--otel-endpoint` (config key `otel.endpoint` for the
 * agent and svc; the watcher has no config file), the OTLP/HTTP base URL spans and metrics go to.
 * The standard OTEL_* variables override it (src/telemetry/telemetry-plan.ts). The watcher's own
 * `--otel-exporter` lives in its flag table; its settings are read here from the parsed arguments.
 */
import type { FlagSpec, FlagValue } from "../config/flag-spec.ts";
import { SettingReader } from "../config/setting-reader.ts";
import { type Result, err, ok } from "../core/result.ts";
import { type SpanExporterKind, type TelemetrySettings, checkOtlpUrl } from "../telemetry/telemetry-plan.ts";

const ENDPOINT_HELP =
  "OTLP/HTTP collector base URL such as http://otel-collector:4318: export spans and metrics there (off when unset; OTEL_EXPORTER_OTLP_ENDPOINT overrides)";

export const TELEMETRY_FLAGS: readonly FlagSpec[] = [
  { name: "otel-endpoint", kind: "string", help: ENDPOINT_HELP, configKey: "otel.endpoint" },
];

/** The watcher's entry: the same flag without a config key. */
export const WATCHER_OTEL_ENDPOINT_FLAG: FlagSpec = { name: "otel-endpoint", kind: "string", help: ENDPOINT_HELP };

function endpoint(read: SettingReader): Result<string | undefined> {
  const text = read.string("otel-endpoint", "");
  if (!text.ok) return text;
  if (text.value === "") return ok(undefined);
  const problem = checkOtlpUrl(text.value);
  return problem === undefined ? ok(text.value) : err(`${read.from("otel-endpoint")}: ${problem}`);
}

/** The agent's and svc's telemetry settings: the flag, else the config key. */
export function resolveTelemetrySettings(
  flags: ReadonlyMap<string, FlagValue>,
  config: ReadonlyMap<string, unknown>,
): Result<TelemetrySettings> {
  const url = endpoint(new SettingReader(TELEMETRY_FLAGS, flags, config));
  return url.ok ? ok({ endpoint: url.value }) : url;
}

/** The watcher's: `--otel-endpoint`, and `--otel-exporter` only when given (its default, none, is "unset"). */
export function watcherTelemetrySettings(
  values: ReadonlyMap<string, FlagValue>,
  given: ReadonlySet<string>,
): Result<TelemetrySettings> {
  const url = endpoint(
    new SettingReader([WATCHER_OTEL_ENDPOINT_FLAG], given.has("otel-endpoint") ? values : new Map(), new Map()),
  );
  if (!url.ok) return url;
  const exporter = given.has("otel-exporter") ? (values.get("otel-exporter") as SpanExporterKind) : undefined;
  return ok({ endpoint: url.value, exporter });
}
