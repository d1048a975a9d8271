/**
 * The workflow daemon's typed configuration: flags, then the config file's keys, then defaults
 * (flags win), plus the `SVC_*` environment (docs/svc.md#settings), read from a parameter.
 * Validated once; every refusal names the flag, key or variable. Owns the startup rules of that
 * section: the listeners' loopback-or-token rule (and `--allow-unauthenticated` for the main
 * listener only), the attach surface's need for a store, postgres's need for a postgres:// URL, the
 * in-memory store and what it turns off (D228, D230). Pure: it opens, binds and loads nothing (the
 * workload loader and the daemon do).
 */
import { existsSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import type { ModelSpec } from "../core/model.ts";
import { type Pattern, parsePatterns } from "../core/permission-patterns.ts";
import { type Result, err, ok } from "../core/result.ts";
import type { FlagValue } from "../config/flag-spec.ts";
import { SettingReader } from "../config/setting-reader.ts";
import type { TelemetrySettings } from "../telemetry/telemetry-plan.ts";
import { resolveTelemetrySettings } from "./telemetry-flags.ts";
import type { McpTimeouts } from "../mcp/types.ts";
import type { DispatchSetting, WatchdogPosture } from "../svc/workload/workload.ts";
import type { LogLevel } from "../telemetry/logger.ts";
import { type AttachLimits, resolveAttachLimits } from "./attach-limits-flags.ts";
import { type AttachUiSettings, resolveAttachUi } from "./attach-ui-flags.ts";
import { type ListenAddress, isLoopbackHost, parseListenAddress } from "../config/listen-address.ts";
import { resolveMcpTimeouts } from "./mcp-flags.ts";
import { resolveModelSpec } from "./model-flags.ts";
import { type PricingSettings, resolvePricingSettings } from "./pricing-flags.ts";
import { type RateLimit, type SvcEnvironment, rateVariables, svcScript, tokenVariable } from "./svc-environment.ts";
import { SVC_FLAGS } from "./svc-flags.ts";
import {
  type SessionStoreDriver,
  checkStoreLease,
  checkStoreLocation,
  checkStorePool,
} from "./session-store-location.ts";
import { type AgentConfig, buildAgentConfig } from "./agent-config.ts";
import { type AllowedOrigins, parseAllowedOrigins } from "../surfaces/http/cors-policy.ts";

/** The attach surface's address: TCP, or a unix socket (an absolute path). */
export type AttachAddress = { kind: "tcp"; address: ListenAddress } | { kind: "unix"; path: string };

export interface MainListenerSettings {
  address: ListenAddress;
  /** `SVC_INJECT_TOKEN`; undefined: unauthenticated (the daemon warns at startup). */
  token: string | undefined;
}

export interface AttachListenerSettings {
  address: AttachAddress;
  /** `SVC_ATTACH_TOKEN`. */
  token: string | undefined;
  /** `--ui-dir` and `--attach-cors-origins`, as on the agent's listener (D368, D371). */
  ui: AttachUiSettings;
}

export interface ProtocolListenerSettings {
  address: ListenAddress;
  /** `SVC_A2A_TOKEN` or `SVC_AGUI_TOKEN`. */
  token: string | undefined;
  /** `SVC_*_RATE` / `SVC_*_BURST`; undefined: no limit. */
  rate: RateLimit | undefined;
  /** AG-UI only: `--agui-allowed-origins`, the browser origins allowed cross-origin (none by default). */
  allowedOrigins?: AllowedOrigins;
}

export interface SessionStoreSettings {
  driver: "sqlite" | "postgres";
  /** An absolute sqlite path or a postgres:// URL; "" when in memory. */
  location: string;
  /** No `--session-db`: nothing is durable (the daemon announces it). */
  inMemory: boolean;
  /** Connections in the postgres store's pool (`--session-db-pool`, D515). */
  pool: number;
  /** postgres: how long a daemon's lease on an incident lasts unrenewed (`--session-db-lease`, D487, D493). */
  leaseMs: number;
}

export interface AutoResumeSettings {
  /** Whether boot auto-resume runs: asked for and the store is durable. */
  enabled: boolean;
  /** Only sessions interrupted within this many milliseconds (0: no window). */
  windowMs: number;
  /** Why it is off, when it is: for the startup log. */
  offReason: string | undefined;
}

export interface SvcConfig {
  /** `--workload` as given: "" is the trivial coordinator; the workload loader resolves it. */
  workload: string;
  /**
   * The agent's defaults for what svc has no setting of (turn workers, worker liveness, tool
   * output caps, the attach surface's heartbeat and subscriber buffers): svc runs on the same core.
   */
  agentDefaults: AgentConfig;
  /** `--dispatch` when the operator set it (flag or config key), else undefined: the bundle decides. */
  dispatch: DispatchSetting | undefined;
  model: ModelSpec;
  listen: MainListenerSettings;
  allowUnauthenticated: boolean;
  attach: AttachListenerSettings | undefined;
  a2a: ProtocolListenerSettings | undefined;
  agui: ProtocolListenerSettings | undefined;
  sessionDb: SessionStoreSettings;
  /** One-shot turn deadline in milliseconds; 0: none. */
  timeoutMs: number;
  autoResume: AutoResumeSettings;
  /** A quiet session leaves memory after this long (D319). */
  sessionIdleTimeoutMs: number;
  /** Undefined: the workload's `safety.watchdog`, else `feedback`. */
  watchdog: WatchdogPosture | undefined;
  logLevel: LogLevel;
  limits: AttachLimits;
  pricing: PricingSettings;
  mcpTimeouts: McpTimeouts;
  /** `SVC_CONFIG_DIR`, passed through for the workload loader's `.agents` root. */
  configDir: string | undefined;
  /** Where the write gate's JSON Lines audit trail goes (absolute path); undefined: stderr. */
  auditLog: string | undefined;
  /** `svc.permissions.deny`: calls the gate refuses whatever an operator answers (the agent's pattern syntax). */
  deny: Pattern[];
  /** `--otel-endpoint` / `otel.endpoint` (the OTEL_* variables are read at start). */
  telemetry: TelemetrySettings;
}

/** A bad setting; caught at the boundary of buildSvcConfig and returned as its error. */
class ConfigProblem extends Error {}

function need<T>(result: Result<T>): T {
  if (!result.ok) throw new ConfigProblem(result.error);
  return result.value;
}

/** Where svc's config file is: `--config`, else `.agents/svc.json`, `svc.yaml` or `svc.yml` when present. */
export function svcConfigPath(configFlag: FlagValue | undefined, cwd: string): string | undefined {
  if (typeof configFlag === "string") return configFlag;
  for (const name of ["svc.json", "svc.yaml", "svc.yml"]) {
    const path = join(cwd, ".agents", name);
    if (existsSync(path)) return path;
  }
  return undefined;
}

function auditLogPath(read: SettingReader, cwd: string): string | undefined {
  const path = optionalString(read, "audit-log");
  return path === "" ? undefined : resolve(cwd, path);
}

function denyPatterns(read: SettingReader): Pattern[] {
  const parsed = parsePatterns(need(read.configStrings("svc.permissions.deny", "permission pattern strings")));
  if (!parsed.ok) throw new ConfigProblem(`config key svc.permissions.deny: ${parsed.error}`);
  return parsed.value;
}

/** A string setting that may be empty (empty means off or in-memory); absent: "". */
function optionalString(read: SettingReader, name: string): string {
  const found = read.setting(name);
  if (found === undefined) return "";
  if (typeof found.value !== "string") throw new ConfigProblem(`${found.from} must be a string`);
  return found.value.trim();
}

function tcpAddress(read: SettingReader, name: string, text: string): ListenAddress {
  const parsed = parseListenAddress(text);
  if (!parsed.ok) throw new ConfigProblem(`${read.from(name)}: ${parsed.error}`);
  return parsed.value;
}

function shown(address: ListenAddress): string {
  return address.host.includes(":") ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
}

/** Beyond loopback (every interface included) only with a token. */
function requireTokenBeyondLoopback(
  read: SettingReader,
  name: string,
  address: ListenAddress,
  token: string | undefined,
  variable: string,
  fix: string,
): void {
  if (token !== undefined || isLoopbackHost(address.host)) return;
  const where = ["", "0.0.0.0", "::"].includes(address.host) ? "every interface" : "a non-loopback address";
  throw new ConfigProblem(`${read.from(name)}=${shown(address)} binds ${where} and ${variable} is not set: ${fix}`);
}

function mainListener(read: SettingReader, env: SvcEnvironment, allowUnauthenticated: boolean): MainListenerSettings {
  const address = tcpAddress(read, "listen", need(read.string("listen")));
  const token = need(tokenVariable(env, "SVC_INJECT_TOKEN"));
  if (!allowUnauthenticated)
    requireTokenBeyondLoopback(
      read,
      "listen",
      address,
      token,
      "SVC_INJECT_TOKEN",
      "anyone who reaches it could inject, resume and abort; set SVC_INJECT_TOKEN, bind a loopback address such as 127.0.0.1:7777, or pass --allow-unauthenticated",
    );
  return { address, token };
}

/**
 * The startup warnings of a configuration that starts but is open (docs/svc.md#settings: an unset
 * SVC_INJECT_TOKEN is unauthenticated, dev only, warned at startup; D339): the main listener
 * without a token, on loopback (every local process) or beyond it (--allow-unauthenticated).
 */
export function svcStartupWarnings(config: Pick<SvcConfig, "listen">): string[] {
  const { address, token } = config.listen;
  if (token !== undefined) return [];
  const who = isLoopbackHost(address.host)
    ? "any process on this machine"
    : "anyone who reaches it (--allow-unauthenticated)";
  return [
    `SVC_INJECT_TOKEN is not set: the main listener on ${shown(address)} answers every request (inject, resume and the approval of gated calls, pause, abort, stop) from ${who} without credentials; for development only: set SVC_INJECT_TOKEN to require Authorization: Bearer <token>`,
  ];
}

/** The longest unix socket path Linux takes (sun_path is 108 bytes with its NUL). */
const MAX_SOCKET_PATH_BYTES = 107;

function attachAddress(read: SettingReader, text: string, cwd: string): AttachAddress {
  if (!text.startsWith("unix:")) return { kind: "tcp", address: tcpAddress(read, "attach-listen", text) };
  const given = text.slice("unix:".length);
  if (given === "")
    throw new ConfigProblem(`${read.from("attach-listen")}=unix: needs a socket path (unix:/path/sock)`);
  const path = resolve(cwd, given);
  const bytes = Buffer.byteLength(path);
  if (bytes > MAX_SOCKET_PATH_BYTES)
    throw new ConfigProblem(
      `${read.from("attach-listen")}: the socket path ${path} is ${bytes} bytes; a unix socket path is at most ${MAX_SOCKET_PATH_BYTES} (use a shorter one)`,
    );
  return { kind: "unix", path };
}

function attachListener(
  read: SettingReader,
  env: SvcEnvironment,
  store: SessionStoreSettings,
  cwd: string,
  ui: AttachUiSettings,
): AttachListenerSettings | undefined {
  // Read whether or not the listener is on, as every token variable: a blank one is refused.
  const token = need(tokenVariable(env, "SVC_ATTACH_TOKEN"));
  const text = optionalString(read, "attach-listen");
  if (text === "") {
    const browser = ui.uiDir !== undefined ? "ui-dir" : ui.corsOrigins.size > 0 ? "attach-cors-origins" : undefined;
    if (browser !== undefined)
      throw new ConfigProblem(`${read.from(browser)} needs --attach-listen: it configures the attach surface`);
    return undefined;
  }
  if (store.inMemory)
    throw new ConfigProblem(
      `${read.from("attach-listen")} needs --session-db: the attach surface serves durable sessions, and without --session-db the store is in memory`,
    );
  const address = attachAddress(read, text, cwd);
  if (address.kind === "tcp")
    requireTokenBeyondLoopback(
      read,
      "attach-listen",
      address.address,
      token,
      "SVC_ATTACH_TOKEN",
      "set SVC_ATTACH_TOKEN, bind a loopback address, or use a unix:/path socket",
    );
  return { address, token, ui };
}

function protocolListener(
  read: SettingReader,
  env: SvcEnvironment,
  surface: "A2A" | "AGUI",
): ProtocolListenerSettings | undefined {
  const name = surface === "A2A" ? "a2a-listen" : "agui-listen";
  // Read whether or not the listener is on: a malformed rate fails startup either way (docs/svc.md#settings),
  // and a blank token variable is refused as everywhere.
  const rate = need(rateVariables(env, surface));
  const token = need(tokenVariable(env, `SVC_${surface}_TOKEN`));
  const allowedOrigins = aguiAllowedOrigins(read, surface);
  const text = optionalString(read, name);
  if (text === "") return undefined;
  const address = tcpAddress(read, name, text);
  const example = surface === "A2A" ? "127.0.0.1:7780" : "127.0.0.1:7781";
  requireTokenBeyondLoopback(
    read,
    name,
    address,
    token,
    `SVC_${surface}_TOKEN`,
    `set SVC_${surface}_TOKEN or bind a loopback address such as ${example}`,
  );
  return { address, token, rate, ...(allowedOrigins.size > 0 ? { allowedOrigins } : {}) };
}

/** `--agui-allowed-origins` (AG-UI only; read listener on or off, so a malformed one always fails). */
function aguiAllowedOrigins(read: SettingReader, surface: "A2A" | "AGUI"): AllowedOrigins {
  if (surface === "A2A") return new Set();
  const entries = optionalString(read, "agui-allowed-origins")
    .split(",")
    .map((entry) => entry.trim());
  return need(parseAllowedOrigins(entries.filter(Boolean), read.from("agui-allowed-origins")));
}

function sessionStore(read: SettingReader, cwd: string): SessionStoreSettings {
  const driver = need(read.oneOf<SessionStoreDriver>("session-db-driver"));
  const location = optionalString(read, "session-db");
  const pool = need(read.int("session-db-pool"));
  need(checkStorePool(driver, read.setting("session-db-pool")?.from));
  const leaseMs = need(checkStoreLease(need(read.duration("session-db-lease")), read.from("session-db-lease")));
  if (location === "") {
    if (driver === "postgres")
      throw new ConfigProblem(
        "--session-db-driver=postgres needs --session-db with a postgres:// URL (an empty --session-db is the in-memory store)",
      );
    return { driver, location: "", inMemory: true, pool, leaseMs };
  }
  const checked = need(checkStoreLocation(driver, location, read.from("session-db")));
  if (driver === "postgres") return { driver, location: checked, inMemory: false, pool, leaseMs };
  return { driver, location: isAbsolute(checked) ? checked : resolve(cwd, checked), inMemory: false, pool, leaseMs };
}

function autoResume(read: SettingReader, store: SessionStoreSettings): AutoResumeSettings {
  const requested = need(read.bool("auto-resume"));
  const windowMs = need(read.duration("auto-resume-window"));
  if (!requested) return { enabled: false, windowMs, offReason: `${read.from("auto-resume")}=false` };
  if (store.inMemory)
    return {
      enabled: false,
      windowMs,
      offReason: "no --session-db: an in-memory store keeps nothing across a restart to resume",
    };
  return { enabled: true, windowMs, offReason: undefined };
}

function optionalChoice<T extends string>(read: SettingReader, name: string): T | undefined {
  return read.setting(name) === undefined ? undefined : need(read.oneOf<T>(name));
}

/** Every setting of `spar svc`, checked; the error names the flag, config key or variable. */
export function buildSvcConfig(
  flags: ReadonlyMap<string, FlagValue>,
  config: ReadonlyMap<string, unknown>,
  env: SvcEnvironment,
  cwd: string,
): Result<SvcConfig, string> {
  const read = new SettingReader(SVC_FLAGS, flags, config);
  try {
    const allowUnauthenticated = need(read.bool("allow-unauthenticated"));
    const sessionDb = sessionStore(read, cwd);
    const a2a = protocolListener(read, env, "A2A");
    const agui = protocolListener(read, env, "AGUI");
    // A protocol token tells callers apart (its JWT tenants), so the per-caller stream cap applies
    // (D334); svc's attach surface has one caller, an admin, whom the cap exempts.
    const callersToldApart = a2a?.token !== undefined || agui?.token !== undefined;
    return ok({
      workload: optionalString(read, "workload"),
      agentDefaults: need(buildAgentConfig(new Map(), new Map(), cwd, navigator.hardwareConcurrency)),
      dispatch: optionalChoice<DispatchSetting>(read, "dispatch"),
      model: need(resolveModelSpec(flags, config, cwd, svcScript(env))),
      listen: mainListener(read, env, allowUnauthenticated),
      allowUnauthenticated,
      attach: attachListener(read, env, sessionDb, cwd, need(resolveAttachUi(flags, config, cwd))),
      a2a,
      agui,
      sessionDb,
      timeoutMs: need(read.duration("timeout")),
      autoResume: autoResume(read, sessionDb),
      sessionIdleTimeoutMs: need(read.duration("session-idle-timeout")),
      watchdog: optionalChoice<WatchdogPosture>(read, "watchdog"),
      logLevel: need(read.oneOf<LogLevel>("log-level")),
      limits: need(resolveAttachLimits(flags, config, callersToldApart)),
      pricing: need(resolvePricingSettings(flags, config, cwd)),
      mcpTimeouts: need(resolveMcpTimeouts(flags, config)),
      configDir: env.SVC_CONFIG_DIR,
      auditLog: auditLogPath(read, cwd),
      deny: denyPatterns(read),
      telemetry: need(resolveTelemetrySettings(flags, config)),
    });
  } catch (error) {
    if (error instanceof ConfigProblem) return err(error.message);
    throw error;
  }
}
