/**
 * The agent daemon's typed configuration: defaults, then the config file, then flags (flags
 * win). Validated once; a bad value is an error naming the flag or key.
 */
import { join } from "node:path";
import type { ModelSpec } from "../core/model.ts";
import { type Result, err, ok } from "../core/result.ts";
import { isValidName } from "../core/session-key.ts";
import { parseDuration } from "../core/duration.ts";
import type { LogLevel } from "../telemetry/logger.ts";
import type { ConfigMap } from "./config-file.ts";
import type { FlagSpec, FlagValue } from "./flags.ts";
import { type ListenAddress, parseListenAddress } from "./listen-address.ts";

export const AGENT_FLAGS: readonly FlagSpec[] = [
  { name: "attach-listen", kind: "string", help: "address of the attach listener (HTTP + SSE)", defaultText: "127.0.0.1:7777", configKey: "attach.listen" },
  { name: "session-db", kind: "string", help: "session store: sqlite file path", defaultText: ".agents/state/sessions.db", configKey: "session_db.path" },
  { name: "session-db-driver", kind: "string", help: "session store driver: sqlite", defaultText: "sqlite", configKey: "session_db.driver" },
  { name: "provider", kind: "string", help: "model provider: echo or scripted", defaultText: "echo", configKey: "model.provider" },
  { name: "model", kind: "string", help: "model: echo (offline), scripted (recorded-turn replay)", defaultText: "echo", configKey: "model.name" },
  { name: "script", kind: "string", help: "scripted model: path of the JSON Lines script", configKey: "model.script" },
  { name: "script-strict", kind: "bool", help: "scripted model: fail a turn whose request differs from the recording", configKey: "model.script_strict" },
  { name: "multi-session", kind: "bool", help: "serve many sessions: enables POST /sessions", defaultText: "false", configKey: "attach.multi_session.enabled" },
  { name: "session-idle-timeout", kind: "duration", help: "evict a quiet session from memory after this long (it rebuilds from the store on next use)", defaultText: "30m", configKey: "attach.multi_session.session_idle_timeout" },
  { name: "workers", kind: "int", help: "turn worker threads", defaultText: "one per core", configKey: "agent.workers" },
  { name: "app-name", kind: "string", help: "app name sessions are created under", defaultText: "spar", configKey: "agent.app_name" },
  { name: "max-steps", kind: "int", help: "model calls a turn may make before it is stopped", defaultText: "25", configKey: "agent.max_steps" },
  { name: "subscriber-buffer", kind: "int", help: "frames an /events subscriber may fall behind before it is disconnected (it resumes with since)", defaultText: "4096", configKey: "attach.subscriber_buffer" },
  { name: "sse-heartbeat", kind: "duration", help: "interval of the `: ping` comment on idle event streams", defaultText: "15s", configKey: "attach.sse_heartbeat" },
  { name: "shutdown-timeout", kind: "duration", help: "listener drain budget on SIGTERM", defaultText: "5s", configKey: "attach.shutdown_timeout" },
  { name: "log-level", kind: "string", help: "debug, info, warn or error", defaultText: "info", configKey: "log.level" },
  { name: "config", kind: "string", help: "config file (JSON or YAML)", defaultText: ".agents/config.json or .agents/config.yaml" },
];

export interface AgentConfig {
  listen: ListenAddress;
  sessionDb: string;
  model: ModelSpec;
  multiSession: boolean;
  idleTimeoutMs: number;
  workers: number;
  appName: string;
  maxSteps: number;
  shutdownTimeoutMs: number;
  subscriberBuffer: number;
  heartbeatMs: number;
  logLevel: LogLevel;
}

type Source = { from: string; value: unknown };

/** The effective raw value: the flag when given, else the config key, else undefined. */
function pick(flags: Map<string, FlagValue>, config: ConfigMap, spec: FlagSpec): Source | undefined {
  if (flags.has(spec.name)) return { from: `--${spec.name}`, value: flags.get(spec.name) };
  if (spec.configKey && config.has(spec.configKey)) return { from: `config key ${spec.configKey}`, value: config.get(spec.configKey) };
  return undefined;
}

function flagSpec(name: string): FlagSpec {
  const spec = AGENT_FLAGS.find((candidate) => candidate.name === name);
  if (!spec) throw new Error(`no flag ${name}`);
  return spec;
}

export function buildAgentConfig(flags: Map<string, FlagValue>, config: ConfigMap, cwd: string, cores: number): Result<AgentConfig> {
  const get = (name: string) => pick(flags, config, flagSpec(name));
  const str = (name: string, fallback: string): Result<string> => {
    const source = get(name);
    if (!source) return ok(fallback);
    return typeof source.value === "string" && source.value.trim() !== "" ? ok(source.value.trim()) : err(`${source.from} must be a non-empty string`);
  };
  const bool = (name: string, fallback: boolean): Result<boolean> => {
    const source = get(name);
    if (!source) return ok(fallback);
    return typeof source.value === "boolean" ? ok(source.value) : err(`${source.from} must be true or false`);
  };
  const int = (name: string, fallback: number, min: number, max: number): Result<number> => {
    const source = get(name);
    if (!source) return ok(fallback);
    const value = source.value;
    return typeof value === "number" && Number.isInteger(value) && value >= min && value <= max ? ok(value) : err(`${source.from} must be an integer from ${min} to ${max}`);
  };
  const duration = (name: string, fallback: number): Result<number> => {
    const source = get(name);
    if (!source) return ok(fallback);
    if (typeof source.value === "number") return ok(source.value);
    const parsed = typeof source.value === "string" ? parseDuration(source.value) : err("not a string");
    return parsed.ok ? ok(parsed.value) : err(`${source.from}: ${parsed.error}`);
  };

  const listenText = str("attach-listen", "127.0.0.1:7777");
  if (!listenText.ok) return listenText;
  const listen = parseListenAddress(listenText.value);
  if (!listen.ok) return err(`${get("attach-listen")?.from ?? "--attach-listen"}: ${listen.error}`);
  const driver = str("session-db-driver", "sqlite");
  if (!driver.ok) return driver;
  if (driver.value !== "sqlite") return err(`--session-db-driver=${driver.value} is not available in this build; use sqlite`);
  const sessionDb = str("session-db", join(cwd, ".agents", "state", "sessions.db"));
  if (!sessionDb.ok) return sessionDb;
  const model = buildModelSpec(get, str);
  if (!model.ok) return model;
  const multiSession = bool("multi-session", false);
  const idle = duration("session-idle-timeout", 30 * 60_000);
  const workers = int("workers", Math.max(1, cores), 1, 64);
  const appName = str("app-name", "spar");
  const maxSteps = int("max-steps", 25, 1, 1000);
  const shutdown = duration("shutdown-timeout", 5000);
  const subscriberBuffer = int("subscriber-buffer", 4096, 16, 1_000_000);
  const heartbeat = duration("sse-heartbeat", 15_000);
  const logLevel = str("log-level", "info");
  for (const result of [multiSession, idle, workers, appName, maxSteps, shutdown, subscriberBuffer, heartbeat, logLevel]) if (!result.ok) return result;
  if (!multiSession.ok || !idle.ok || !workers.ok || !appName.ok || !maxSteps.ok || !shutdown.ok || !subscriberBuffer.ok || !heartbeat.ok || !logLevel.ok) return err("unreachable");
  if (heartbeat.value < 100) return err("--sse-heartbeat must be at least 100ms");
  if (!isValidName(appName.value)) return err(`--app-name ${JSON.stringify(appName.value)} must be letters, digits, . _ : @ -`);
  if (!["debug", "info", "warn", "error"].includes(logLevel.value)) return err(`--log-level must be debug, info, warn or error`);
  return ok({
    listen: listen.value,
    sessionDb: sessionDb.value,
    model: model.value,
    multiSession: multiSession.value,
    idleTimeoutMs: idle.value,
    workers: workers.value,
    appName: appName.value,
    maxSteps: maxSteps.value,
    shutdownTimeoutMs: shutdown.value,
    subscriberBuffer: subscriberBuffer.value,
    heartbeatMs: heartbeat.value,
    logLevel: logLevel.value as LogLevel,
  });
}

function buildModelSpec(
  get: (name: string) => Source | undefined,
  str: (name: string, fallback: string) => Result<string>,
): Result<ModelSpec> {
  const provider = str("provider", "");
  const name = str("model", "");
  if (!provider.ok) return provider;
  if (!name.ok) return name;
  const chosen = provider.value || name.value || "echo";
  if (provider.value && name.value && provider.value !== name.value && (provider.value === "echo" || provider.value === "scripted")) {
    return err(`--provider=${provider.value} and --model=${name.value} disagree; the ${provider.value} provider has one model, ${provider.value}`);
  }
  if (chosen === "echo") return ok({ provider: "echo", name: "echo" });
  if (chosen === "scripted") {
    const script = get("script");
    if (!script || typeof script.value !== "string" || script.value === "") {
      return err('model "scripted" requires --script (path to a recorded-turns JSONL file)');
    }
    const strict = get("script-strict");
    return ok({ provider: "scripted", name: "scripted", scriptPath: script.value, scriptStrict: strict?.value === true });
  }
  return err(`model provider ${JSON.stringify(chosen)} is not available in this build yet; use --model=echo or --model=scripted`);
}
