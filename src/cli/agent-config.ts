/**
 * The agent daemon's typed configuration: defaults, then the config file, then flags (flags
 * win). Validated once; a bad value is an error naming the flag or key.
 */
import { existsSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import type { ModelSpec } from "../core/model.ts";
import { type Result, err, ok } from "../core/result.ts";
import { isValidName } from "../core/session-key.ts";
import { SettingReader } from "../config/setting-reader.ts";
import type { LogLevel } from "../telemetry/logger.ts";
import type { TelemetrySettings } from "../telemetry/telemetry-plan.ts";
import { resolveTelemetrySettings } from "./telemetry-flags.ts";
import { type PeerHubSettings, resolvePeerSettings } from "../surfaces/peers/peer-flags.ts";
import { type PeerClientSettings, resolvePeerClientSettings } from "../peers-client/peer-client-flags.ts";
import { type AgentCardSettings, loadAgentCardSettings } from "../surfaces/attach/agent-card-config.ts";
import { parsePatterns } from "../core/permission-patterns.ts";
import type { PermissionMode } from "../core/permission-policy.ts";
import type { PermissionSettings } from "../runtime/gated-tools.ts";
import type { ConfigMap } from "../config/config-file.ts";
import { SPAR_VERSION } from "../daemon/version.ts";
import type { FlagValue } from "../config/flag-spec.ts";
import { AGENT_FLAGS } from "./agent-flags.ts";
import {
  type SessionStoreDriver,
  checkStoreLease,
  checkStoreLocation,
  checkStorePool,
} from "./session-store-location.ts";
import { type ScriptSource, resolveModelSpec } from "./model-flags.ts";
import { type PricingSettings, resolvePricingSettings } from "./pricing-flags.ts";
import { type ToolsSettings, resolveToolsSettings } from "./tools-flags.ts";
import { type McpSettings, resolveMcpSettings } from "./mcp-flags.ts";
import { resolveKnowledgeSettings } from "./knowledge-flags.ts";
import type { KnowledgeSettings } from "../memory/agent-knowledge.ts";
import { type ListenAddress, parseListenAddress } from "../config/listen-address.ts";
import { type AutoContinueSettings, resolveAutoContinue, resolveGuardrailConfig } from "./guardrail-flags.ts";
import type { GuardrailConfig } from "../core/guardrails.ts";
import { type AttachLimits, resolveAttachLimits } from "./attach-limits-flags.ts";
import { type AttachUiSettings, resolveAttachUi } from "./attach-ui-flags.ts";
import type { SubagentSpec } from "../core/subagents.ts";
import { resolveSubagents } from "./subagent-config.ts";
import { type AlertSettings, resolveAlertSettings } from "../alerts/alert-config.ts";
import { resolveTriageSettings } from "./triage-config.ts";

/** Who the callers are: a caller table, client certificates, or both (D330). */
export interface CallerAuthSettings {
  /** The caller table; undefined: client certificates alone name the callers. */
  tableFile: string | undefined;
  adminIdentities: string[];
  proxyIdentities: string[];
  /** Identities a proxy may assert; empty: any identity but an admin one. */
  assertableIdentities: string[];
  /** Whether a proxy may assert an admin identity (and so act as that admin). */
  proxyMayAssertAdmins: boolean;
  allowAnonymous: boolean;
  proxyHeader: string;
}

export interface AgentConfig {
  listen: ListenAddress;
  /** Environment variable that holds the shared bearer token, when one is configured. */
  tokenEnv: string | undefined;
  readonly: boolean;
  /** HTTPS (and mTLS with a client CA) on the attach listener. */
  tls: { cert: string; key: string; ca?: string } | undefined;
  /** Multi-session auth: present when a token table is configured. */
  callerAuth: CallerAuthSettings | undefined;
  /** Extra Host names of an ungated listener, open-stream caps, inbox caps. */
  limits: AttachLimits;
  /** The embedded dashboard's directory and the cross-origin allow list (D368, D371). */
  ui: AttachUiSettings;
  peerHub: PeerHubSettings;
  /** `call_peer` and the registration with a hub (D364, D367). */
  peerClients: PeerClientSettings;
  agentCard: AgentCardSettings;
  permissions: PermissionSettings;
  pricing: PricingSettings;
  tools: ToolsSettings;
  /** Tool servers (mcp.json); undefined under the echo model. */
  mcp: McpSettings | undefined;
  /** Skill bundles, the AGENTS.md memory chain and the description: the system prompt. */
  knowledge: KnowledgeSettings;
  guardrails: GuardrailConfig;
  autoContinue: AutoContinueSettings;
  /** The session store's driver: sqlite (the default) or postgres (D483). */
  sessionDbDriver: SessionStoreDriver;
  /** A sqlite file path, or a postgres:// URL under the postgres driver (it may hold a password: never log it). */
  sessionDb: string;
  /** 0: no cap. sqlite only: under postgres a cap is refused at startup (D484). */
  sessionDbMaxMb: number;
  /** postgres: how long a daemon's lease on a session lasts unrenewed (D487). */
  sessionDbLeaseMs: number;
  /** Connections in the postgres store's pool (D515); set under sqlite, refused at startup. */
  sessionDbPool: number;
  model: ModelSpec;
  multiSession: boolean;
  idleTimeoutMs: number;
  workers: number;
  /** A turn worker running turns that leaves a ping unanswered this long is replaced. */
  workerLivenessMs: number;
  appName: string;
  maxSteps: number;
  /** The root of the sessions' plan files (D358): `--plans-dir`, default `<tools root>/.agents/plans`. */
  plansDir: string;
  shutdownTimeoutMs: number;
  subscriberBuffer: number;
  subscriberBufferBytes: number;
  heartbeatMs: number;
  logLevel: LogLevel;
  /** `--otel-endpoint` / `otel.endpoint` (the OTEL_* variables are read at start). */
  telemetry: TelemetrySettings;
  /** The subagent roster (`agent.subagents`, D351). */
  subagents: SubagentSpec[];
  /** `--wake-loop` (`agent.wake_loop.enabled`, default on, D362): the loop-control tools and scheduled wakes. */
  wakeLoop: boolean;
  /** The `alert` tool's targets and rate (`alerts.*`, D460); their variables are read at start. */
  alerts: AlertSettings;
}

/** A bad setting; caught at the boundary of buildAgentConfig and returned as its error. */
class ConfigProblem extends Error {}

const AUTH_KEY_PREFIX = "attach.multi_session.auth.";

/**
 * The per-caller settings: with a caller table or client certificates (each certificate names a
 * caller, D330) the `attach.multi_session.auth` block applies; without either it cannot, and a key
 * of it set is an error rather than ignored. `allow_anonymous` cannot apply with certificates alone
 * (every client presents one).
 */
function callerAuthSettings(
  read: SettingReader,
  config: ReadonlyMap<string, unknown>,
  tableFile: string,
  clientCertificates: boolean,
): CallerAuthSettings | undefined {
  // Read (and so checked) with or without a table: a wrong type is an error either way.
  const auth = {
    adminIdentities: need(read.configStrings(`${AUTH_KEY_PREFIX}admin_identities`, "identity strings")),
    proxyIdentities: need(read.configStrings(`${AUTH_KEY_PREFIX}proxy_identities`, "identity strings")),
    assertableIdentities: need(read.configStrings(`${AUTH_KEY_PREFIX}assertable_identities`, "identity strings")),
    proxyMayAssertAdmins: need(read.configValue(`${AUTH_KEY_PREFIX}proxy_may_assert_admins`, "boolean", false)),
    allowAnonymous: need(read.configValue(`${AUTH_KEY_PREFIX}allow_anonymous`, "boolean", false)),
    proxyHeader: need(read.configValue(`${AUTH_KEY_PREFIX}proxy_header`, "string", "X-Asserted-Caller")),
  };
  const setKeys = [...config.keys()].filter(
    (key) => key.startsWith(AUTH_KEY_PREFIX) && key !== `${AUTH_KEY_PREFIX}table_file`,
  );
  if (tableFile === "" && !clientCertificates) {
    if (setKeys.length > 0)
      throw new ConfigProblem(
        `config key ${setKeys[0]} needs callers told apart: a caller table (--auth-table) or client certificates (--attach-client-ca)`,
      );
    return undefined;
  }
  if (tableFile === "" && auth.allowAnonymous)
    throw new ConfigProblem(
      `config key ${AUTH_KEY_PREFIX}allow_anonymous cannot apply with client certificates alone: every client presents one`,
    );
  return { tableFile: tableFile === "" ? undefined : tableFile, ...auth };
}
/** The value of a read, or a ConfigProblem carrying its error (the builder reads many in a row). */
function need<T>(result: Result<T>): T {
  if (!result.ok) throw new ConfigProblem(result.error);
  return result.value;
}

export function buildAgentConfig(
  flags: Map<string, FlagValue>,
  config: ConfigMap,
  cwd: string,
  cores: number,
): Result<AgentConfig> {
  const read = new SettingReader(AGENT_FLAGS, flags, config);
  const peerHub = resolvePeerSettings(flags, config, cwd);
  if (!peerHub.ok) return err(peerHub.error);
  const peerClients = resolvePeerClientSettings(flags, config, peerHub.value.enabled);
  if (!peerClients.ok) return err(peerClients.error);
  const pricing = resolvePricingSettings(flags, config, cwd);
  if (!pricing.ok) return err(pricing.error);
  const tools = resolveToolsSettings(flags, config, cwd);
  if (!tools.ok) return err(tools.error);
  const knowledge = resolveKnowledgeSettings(flags, config, cwd);
  if (!knowledge.ok) return err(knowledge.error);
  const guardrails = resolveGuardrailConfig(flags, config);
  if (!guardrails.ok) return err(guardrails.error);
  const autoContinue = resolveAutoContinue(flags, config);
  if (!autoContinue.ok) return err(autoContinue.error);
  const telemetry = resolveTelemetrySettings(flags, config);
  if (!telemetry.ok) return err(telemetry.error);
  try {
    const listen = parseListenAddress(need(read.string("attach-listen")));
    if (!listen.ok) throw new ConfigProblem(`${read.from("attach-listen")}: ${listen.error}`);
    const store = sessionStore(read, cwd);
    const appName = need(read.string("app-name"));
    if (!isValidName(appName))
      throw new ConfigProblem(`--app-name ${JSON.stringify(appName)} must be letters, digits, . _ : @ -`);
    const agentCard = loadAgentCardSettings({ config, flags, cwd, version: SPAR_VERSION, defaultName: appName });
    if (!agentCard.ok) throw new ConfigProblem(agentCard.error);
    const tokenEnv = need(read.string("attach-token", ""));
    const tableFile = need(read.string("auth-table", ""));
    const tls = tlsSettings(read, cwd);
    const limits = resolveAttachLimits(flags, config, tableFile !== "" || tls?.ca !== undefined);
    if (!limits.ok) throw new ConfigProblem(limits.error);
    const ui = resolveAttachUi(flags, config, cwd);
    if (!ui.ok) throw new ConfigProblem(ui.error);
    const model = need(resolveModelSpec(flags, config, cwd, agentScript(read)));
    const mcp = resolveMcpSettings(flags, config, cwd, model.provider);
    if (!mcp.ok) throw new ConfigProblem(mcp.error);
    const subagents = need(resolveSubagents(config, model, appName));
    const alerts = need(resolveAlertSettings(config));
    return ok({
      listen: listen.value,
      tokenEnv: tokenEnv === "" ? undefined : tokenEnv,
      readonly: need(read.bool("attach-readonly")),
      tls,
      peerHub: peerHub.value,
      peerClients: peerClients.value,
      permissions: permissionSettings(read, config),
      pricing: pricing.value,
      tools: tools.value,
      mcp: mcp.value,
      knowledge: knowledge.value,
      guardrails: guardrails.value,
      autoContinue: autoContinue.value,
      agentCard: agentCard.value,
      callerAuth: callerAuthSettings(read, config, tableFile, tls?.ca !== undefined),
      limits: limits.value,
      ui: ui.value,
      ...store,
      model,
      multiSession: need(read.bool("multi-session")),
      idleTimeoutMs: need(read.duration("session-idle-timeout")),
      workers: need(read.int("workers", Math.min(64, Math.max(1, cores)))),
      workerLivenessMs: need(read.duration("worker-liveness")),
      appName,
      maxSteps: need(read.int("max-steps")),
      plansDir: plansDir(read, cwd, tools.value.root),
      shutdownTimeoutMs: need(read.duration("shutdown-timeout")),
      subscriberBuffer: need(read.int("subscriber-buffer")),
      subscriberBufferBytes: need(read.int("subscriber-buffer-bytes")),
      heartbeatMs: need(read.duration("sse-heartbeat")),
      logLevel: need(read.oneOf<LogLevel>("log-level")),
      telemetry: telemetry.value,
      subagents,
      wakeLoop: need(read.bool("wake-loop")),
      alerts,
    });
  } catch (error) {
    if (error instanceof ConfigProblem) return err(error.message);
    throw error;
  }
}

/**
 * The session store (D483): sqlite at `--session-db` (default `.agents/state/sessions.db`), or
 * PostgreSQL at the postgres:// URL `--session-db` must then give, checked by the rule svc uses.
 * `--session-db-max-mb` is a sqlite page cap: under postgres a cap is refused, not ignored (D484);
 * `--session-db-pool` sizes the postgres pool and is refused under sqlite likewise (D515).
 * Everything behind the Store goes to the database; the peer hub's state file stays a local file
 * (D485). Several agent daemons may share the database: sessions are served under leases of
 * `--session-db-lease` (D487).
 */
function sessionStore(
  read: SettingReader,
  cwd: string,
): Pick<AgentConfig, "sessionDbDriver" | "sessionDb" | "sessionDbMaxMb" | "sessionDbPool" | "sessionDbLeaseMs"> {
  const driver = need(read.oneOf<SessionStoreDriver>("session-db-driver"));
  const maxMb = need(read.int("session-db-max-mb"));
  const pool = need(read.int("session-db-pool"));
  need(checkStorePool(driver, read.setting("session-db-pool")?.from));
  const leaseMs = need(checkStoreLease(need(read.duration("session-db-lease")), read.from("session-db-lease")));
  if (driver === "postgres") {
    if (need(read.string("session-db", "")).trim() === "")
      throw new ConfigProblem("--session-db-driver=postgres needs --session-db with a postgres:// URL");
    if (maxMb > 0)
      throw new ConfigProblem(
        `${read.from("session-db-max-mb")} caps a sqlite file and does not apply under --session-db-driver=postgres (set the database's own limits)`,
      );
  }
  const location = need(read.string("session-db", join(cwd, ".agents", "state", "sessions.db")));
  const checked = need(checkStoreLocation(driver, location, read.from("session-db")));
  return {
    sessionDbDriver: driver,
    sessionDb: checked,
    sessionDbMaxMb: maxMb,
    sessionDbPool: pool,
    sessionDbLeaseMs: leaseMs,
  };
}

/** `--plans-dir` (relative: from the working directory), else `<tools root>/.agents/plans`. */
function plansDir(read: SettingReader, cwd: string, toolsRoot: string): string {
  const configured = need(read.string("plans-dir", "")).trim();
  return configured === "" ? join(toolsRoot, ".agents", "plans") : resolve(cwd, configured);
}

function permissionSettings(read: SettingReader, config: ConfigMap): PermissionSettings {
  const mode = need(read.oneOf<PermissionMode>("permission-mode"));
  const patterns = (key: string) => {
    const parsed = parsePatterns(need(read.configStrings(key, "permission pattern strings")));
    if (!parsed.ok) throw new ConfigProblem(`config key ${key}: ${parsed.error}`);
    return parsed.value;
  };
  const triage = need(resolveTriageSettings(read, config));
  return {
    mode,
    approvalTimeoutMs: need(read.duration("approval-timeout")),
    allow: patterns("permissions.allow"),
    deny: patterns("permissions.deny"),
    ...(triage === undefined ? {} : { triage }),
  };
}

function tlsSettings(read: SettingReader, cwd: string): AgentConfig["tls"] {
  const file = (name: string) => {
    const path = need(read.string(name, ""));
    if (path === "") return "";
    const absolute = isAbsolute(path) ? path : join(cwd, path);
    if (!existsSync(absolute)) throw new ConfigProblem(`${read.from(name)}: ${absolute} does not exist`);
    return absolute;
  };
  const cert = file("attach-tls-cert");
  const key = file("attach-tls-key");
  const ca = file("attach-client-ca");
  if ((cert === "") !== (key === ""))
    throw new ConfigProblem("TLS needs both --attach-tls-cert and --attach-tls-key (attach.tls_cert, attach.tls_key)");
  if (ca !== "" && cert === "")
    throw new ConfigProblem(
      "--attach-client-ca (attach.client_ca) needs TLS: set --attach-tls-cert and --attach-tls-key",
    );
  if (cert === "") return undefined;
  return ca === "" ? { cert, key } : { cert, key, ca };
}

/** The agent's script: `--script` (config `model.script`), strict with `--script-strict`. */
function agentScript(read: SettingReader): ScriptSource {
  return {
    missing: 'model "scripted" requires --script (path to a recorded-turns JSONL file)',
    read: () => {
      const path = read.string("script", "");
      if (!path.ok || path.value === "") return path.ok ? ok(undefined) : path;
      const strict = read.bool("script-strict", false);
      if (!strict.ok) return strict;
      return ok({ path: path.value, strict: strict.value, from: read.from("script") });
    },
  };
}
