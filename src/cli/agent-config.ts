/**
 * The agent daemon's typed configuration: defaults, then the config file, then flags (flags
 * win). Validated once; a bad value is an error naming the flag or key.
 */
import { existsSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import type { ModelSpec, RemoteProvider } from "../core/model.ts";
import { REMOTE_PROVIDERS, isRemoteProvider } from "../models/providers/provider-catalog.ts";
import { type Result, err, ok } from "../core/result.ts";
import { isValidName } from "../core/session-key.ts";
import { SettingReader } from "../config/setting-reader.ts";
import type { LogLevel } from "../telemetry/logger.ts";
import { PEER_FLAGS, type PeerHubSettings, resolvePeerSettings } from "../surfaces/peers/peer-flags.ts";
import {
  AGENT_CARD_FLAGS,
  type AgentCardSettings,
  loadAgentCardSettings,
} from "../surfaces/attach/agent-card-config.ts";
import { parsePatterns } from "../core/permission-patterns.ts";
import type { PermissionMode } from "../core/permission-policy.ts";
import type { PermissionSettings } from "../runtime/gated-tools.ts";
import type { ConfigMap } from "../config/config-file.ts";
import { SPAR_VERSION } from "./version.ts";
import type { FlagSpec, FlagValue } from "../config/flag-spec.ts";
import { PRICING_FLAGS, type PricingSettings, resolvePricingSettings } from "./pricing-flags.ts";
import { TOOLS_FLAGS, type ToolsSettings, resolveToolsSettings } from "./tools-flags.ts";
import { MCP_FLAGS, type McpSettings, resolveMcpSettings } from "./mcp-flags.ts";
import { KNOWLEDGE_FLAGS, resolveKnowledgeSettings } from "./knowledge-flags.ts";
import type { KnowledgeSettings } from "../memory/agent-knowledge.ts";
import { type ListenAddress, parseListenAddress } from "./listen-address.ts";
import {
  type AutoContinueSettings,
  GUARDRAIL_FLAGS,
  resolveAutoContinue,
  resolveGuardrailConfig,
} from "./guardrail-flags.ts";
import type { GuardrailConfig } from "../core/guardrails.ts";
import { ATTACH_LIMITS_FLAGS, type AttachLimits, resolveAttachLimits } from "./attach-limits-flags.ts";

const CORE_AGENT_FLAGS: readonly FlagSpec[] = [
  {
    name: "attach-listen",
    kind: "string",
    help: "address of the attach listener (HTTP + SSE)",
    defaultValue: "127.0.0.1:7777",
    configKey: "attach.listen",
  },
  {
    name: "attach-token",
    kind: "string",
    help: "name of the environment variable holding the listener's shared bearer token",
    configKey: "attach.token_env",
  },
  {
    name: "attach-tls-cert",
    kind: "string",
    help: "PEM certificate of the listener: serve HTTPS",
    configKey: "attach.tls_cert",
  },
  { name: "attach-tls-key", kind: "string", help: "PEM private key of --attach-tls-cert", configKey: "attach.tls_key" },
  {
    name: "attach-client-ca",
    kind: "string",
    help: "PEM CA bundle: clients must present a certificate it signed (mTLS)",
    configKey: "attach.client_ca",
  },
  {
    name: "auth-table",
    kind: "string",
    help: "bearer-token table of callers (JSON or YAML; see README): turns on multi-session auth",
    configKey: "attach.multi_session.auth.table_file",
  },
  {
    name: "attach-readonly",
    kind: "bool",
    help: "serve only GET, HEAD and OPTIONS (403 for anything else)",
    defaultValue: "false",
    configKey: "attach.readonly",
  },
  {
    name: "session-db",
    kind: "string",
    help: "session store: sqlite file path",
    defaultText: ".agents/state/sessions.db",
    configKey: "session_db.path",
  },
  {
    name: "session-db-max-mb",
    kind: "int",
    help: "cap the sqlite store at this many MiB; writes past it answer 503 and change nothing (0: no cap)",
    defaultValue: "0",
    configKey: "session_db.max_mb",
    bounds: { min: 0, max: 1_048_576 },
  },
  {
    name: "session-db-driver",
    kind: "string",
    help: "session store driver: sqlite",
    defaultValue: "sqlite",
    configKey: "session_db.driver",
    choices: ["sqlite"],
  },
  {
    name: "provider",
    kind: "string",
    help: "model provider: echo, scripted, openai, anthropic, google or openai-compatible",
    defaultText: "echo",
    configKey: "model.provider",
  },
  {
    name: "model",
    kind: "string",
    help: "model: echo (offline), scripted (recorded-turn replay) or the provider's model id (gpt-5-mini, claude-sonnet-4-5, gemini-2.5-flash)",
    defaultText: "echo",
    configKey: "model.name",
  },
  {
    name: "model-base-url",
    kind: "string",
    help: "API base URL of the provider, version path included (http://127.0.0.1:8000/v1); required for openai-compatible",
    configKey: "model.base_url",
  },
  {
    name: "model-api-key-env",
    kind: "string",
    help: "name of the environment variable holding the provider's API key",
    defaultText: "OPENAI_API_KEY, ANTHROPIC_API_KEY, GOOGLE_GENERATIVE_AI_API_KEY; none for openai-compatible",
    configKey: "model.api_key_env",
  },
  {
    name: "model-stall-timeout",
    kind: "duration",
    help: "fail a model call when the provider sends nothing for this long (transient_network)",
    defaultText: "5m",
    configKey: "model.stall_timeout",
    bounds: { min: 100 },
  },
  {
    name: "model-call-timeout",
    kind: "duration",
    help: "fail a model call that has not finished after this long (transient_network)",
    defaultText: "15m",
    configKey: "model.call_timeout",
    bounds: { min: 100 },
  },
  {
    name: "model-max-output-tokens",
    kind: "int",
    help: "output-token cap of each model call (a call that hits it finishes `length` and auto-continue goes on)",
    defaultText: "the provider's",
    configKey: "model.max_output_tokens",
    bounds: { min: 1, max: 10_000_000 },
  },
  {
    name: "model-context-window",
    kind: "int",
    help: "the model's context window in tokens: past 80% of it the older turns are compacted into a summary",
    defaultText: "128000",
    configKey: "model.context_window",
    bounds: { min: 100, max: 100_000_000 },
  },
  { name: "script", kind: "string", help: "scripted model: path of the JSON Lines script", configKey: "model.script" },
  {
    name: "script-strict",
    kind: "bool",
    help: "scripted model: fail a turn whose request differs from the recording",
    configKey: "model.script_strict",
  },
  {
    name: "multi-session",
    kind: "bool",
    help: "serve many sessions: enables POST /sessions",
    defaultValue: "false",
    configKey: "attach.multi_session.enabled",
  },
  {
    name: "session-idle-timeout",
    kind: "duration",
    help: "evict a quiet session from memory after this long (it rebuilds from the store on next use)",
    defaultValue: "30m",
    configKey: "attach.multi_session.session_idle_timeout",
  },
  {
    name: "workers",
    kind: "int",
    help: "turn worker threads",
    defaultText: "one per core",
    configKey: "agent.workers",
    bounds: { min: 1, max: 64 },
  },
  {
    name: "worker-liveness",
    kind: "duration",
    help: "replace a turn worker that leaves a ping unanswered this long while it runs turns (its turns end failed)",
    defaultValue: "30s",
    configKey: "agent.worker_liveness",
    bounds: { min: 100 },
  },
  {
    name: "app-name",
    kind: "string",
    help: "app name sessions are created under",
    defaultValue: "spar",
    configKey: "agent.app_name",
  },
  {
    name: "max-steps",
    kind: "int",
    help: "model calls a turn may make before it is stopped",
    defaultValue: "25",
    configKey: "agent.max_steps",
    bounds: { min: 1, max: 1000 },
  },
  {
    name: "subscriber-buffer",
    kind: "int",
    help: "frames an /events subscriber may fall behind before it is disconnected (it resumes with since)",
    defaultValue: "4096",
    configKey: "attach.subscriber_buffer",
    bounds: { min: 16, max: 1_000_000 },
  },
  {
    name: "subscriber-buffer-bytes",
    kind: "int",
    help: "bytes of frames an /events subscriber may fall behind before it is disconnected (bounds large frames)",
    defaultValue: "8388608",
    configKey: "attach.subscriber_buffer_bytes",
    bounds: { min: 64 * 1024, max: 1024 * 1024 * 1024 },
  },
  {
    name: "sse-heartbeat",
    kind: "duration",
    help: "interval of the `: ping` comment on idle event streams",
    defaultValue: "15s",
    configKey: "attach.sse_heartbeat",
    bounds: { min: 100 },
  },
  {
    name: "permission-mode",
    kind: "string",
    help: "permission mode for tool calls: ask, acceptEdits, plan, yolo or allow (config only in spirit: allow runs everything)",
    defaultValue: "ask",
    configKey: "permissions.mode",
    choices: ["ask", "acceptEdits", "plan", "yolo", "allow"],
  },
  {
    name: "approval-timeout",
    kind: "duration",
    help: "how long a permission prompt waits for an answer before the call is refused",
    defaultValue: "5m",
    configKey: "permissions.approval_timeout",
    bounds: { min: 100 },
  },
  {
    name: "shutdown-timeout",
    kind: "duration",
    help: "listener drain budget on SIGTERM",
    defaultValue: "5s",
    configKey: "attach.shutdown_timeout",
  },
  {
    name: "log-level",
    kind: "string",
    help: "debug, info, warn or error",
    defaultValue: "info",
    configKey: "log.level",
    choices: ["debug", "info", "warn", "error"],
  },
  {
    name: "config",
    kind: "string",
    help: "config file (JSON or YAML)",
    defaultText: ".agents/config.json or .agents/config.yaml",
  },
];

export const AGENT_FLAGS: readonly FlagSpec[] = [
  ...CORE_AGENT_FLAGS,
  ...GUARDRAIL_FLAGS,
  ...PEER_FLAGS,
  ...AGENT_CARD_FLAGS,
  ...PRICING_FLAGS,
  ...TOOLS_FLAGS,
  ...KNOWLEDGE_FLAGS,
  ...MCP_FLAGS,
  ...ATTACH_LIMITS_FLAGS,
];

export interface CallerAuthSettings {
  tableFile: string;
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
  peerHub: PeerHubSettings;
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
  sessionDb: string;
  /** 0: no cap. */
  sessionDbMaxMb: number;
  model: ModelSpec;
  multiSession: boolean;
  idleTimeoutMs: number;
  workers: number;
  /** A turn worker running turns that leaves a ping unanswered this long is replaced. */
  workerLivenessMs: number;
  appName: string;
  maxSteps: number;
  shutdownTimeoutMs: number;
  subscriberBuffer: number;
  subscriberBufferBytes: number;
  heartbeatMs: number;
  logLevel: LogLevel;
}

/** A bad setting; caught at the boundary of buildAgentConfig and returned as its error. */
class ConfigProblem extends Error {}

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
  try {
    const listen = parseListenAddress(need(read.string("attach-listen")));
    if (!listen.ok) throw new ConfigProblem(`${read.from("attach-listen")}: ${listen.error}`);
    need(read.oneOf("session-db-driver"));
    const appName = need(read.string("app-name"));
    if (!isValidName(appName))
      throw new ConfigProblem(`--app-name ${JSON.stringify(appName)} must be letters, digits, . _ : @ -`);
    const agentCard = loadAgentCardSettings({ config, flags, cwd, version: SPAR_VERSION, defaultName: appName });
    if (!agentCard.ok) throw new ConfigProblem(agentCard.error);
    const tokenEnv = need(read.string("attach-token", ""));
    const tableFile = need(read.string("auth-table", ""));
    // Read (and so checked) with or without a table: a wrong type is an error either way.
    const auth = {
      adminIdentities: need(read.configStrings("attach.multi_session.auth.admin_identities", "identity strings")),
      proxyIdentities: need(read.configStrings("attach.multi_session.auth.proxy_identities", "identity strings")),
      assertableIdentities: need(
        read.configStrings("attach.multi_session.auth.assertable_identities", "identity strings"),
      ),
      proxyMayAssertAdmins: need(
        read.configValue("attach.multi_session.auth.proxy_may_assert_admins", "boolean", false),
      ),
      allowAnonymous: need(read.configValue("attach.multi_session.auth.allow_anonymous", "boolean", false)),
      proxyHeader: need(read.configValue("attach.multi_session.auth.proxy_header", "string", "X-Asserted-Caller")),
    };
    const tls = tlsSettings(read, cwd);
    const limits = resolveAttachLimits(flags, config, tableFile !== "" || tls?.ca !== undefined);
    if (!limits.ok) throw new ConfigProblem(limits.error);
    const model = buildModelSpec(read, cwd);
    const mcp = resolveMcpSettings(flags, config, cwd, model.provider);
    if (!mcp.ok) throw new ConfigProblem(mcp.error);
    return ok({
      listen: listen.value,
      tokenEnv: tokenEnv === "" ? undefined : tokenEnv,
      readonly: need(read.bool("attach-readonly")),
      tls,
      peerHub: peerHub.value,
      permissions: permissionSettings(read),
      pricing: pricing.value,
      tools: tools.value,
      mcp: mcp.value,
      knowledge: knowledge.value,
      guardrails: guardrails.value,
      autoContinue: autoContinue.value,
      agentCard: agentCard.value,
      callerAuth: tableFile === "" ? undefined : { tableFile, ...auth },
      limits: limits.value,
      sessionDb: need(read.string("session-db", join(cwd, ".agents", "state", "sessions.db"))),
      sessionDbMaxMb: need(read.int("session-db-max-mb")),
      model,
      multiSession: need(read.bool("multi-session")),
      idleTimeoutMs: need(read.duration("session-idle-timeout")),
      workers: need(read.int("workers", Math.min(64, Math.max(1, cores)))),
      workerLivenessMs: need(read.duration("worker-liveness")),
      appName,
      maxSteps: need(read.int("max-steps")),
      shutdownTimeoutMs: need(read.duration("shutdown-timeout")),
      subscriberBuffer: need(read.int("subscriber-buffer")),
      subscriberBufferBytes: need(read.int("subscriber-buffer-bytes")),
      heartbeatMs: need(read.duration("sse-heartbeat")),
      logLevel: need(read.oneOf<LogLevel>("log-level")),
    });
  } catch (error) {
    if (error instanceof ConfigProblem) return err(error.message);
    throw error;
  }
}

function permissionSettings(read: SettingReader): PermissionSettings {
  const mode = need(read.oneOf<PermissionMode>("permission-mode"));
  const patterns = (key: string) => {
    const parsed = parsePatterns(need(read.configStrings(key, "permission pattern strings")));
    if (!parsed.ok) throw new ConfigProblem(`config key ${key}: ${parsed.error}`);
    return parsed.value;
  };
  return {
    mode,
    approvalTimeoutMs: need(read.duration("approval-timeout")),
    allow: patterns("permissions.allow"),
    deny: patterns("permissions.deny"),
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

function buildModelSpec(read: SettingReader, cwd: string): ModelSpec {
  const spec = chooseModel(read, cwd);
  if (read.setting("model-context-window")) spec.contextWindowTokens = need(read.int("model-context-window", 0));
  return spec;
}

function chooseModel(read: SettingReader, cwd: string): ModelSpec {
  const provider = need(read.string("provider", ""));
  const name = need(read.string("model", ""));
  if (provider !== "" && provider !== "echo" && provider !== "scripted" && !isRemoteProvider(provider)) {
    throw new ConfigProblem(
      `${read.from("provider")} ${JSON.stringify(provider)} is not a provider; use echo, scripted, ${Object.keys(REMOTE_PROVIDERS).join(", ")}`,
    );
  }
  const chosen =
    provider || (name === "" || name === "echo" || name === "scripted" ? name || "echo" : inferProvider(name));
  if (chosen === "echo" || chosen === "scripted") {
    if (name !== "" && name !== chosen)
      throw new ConfigProblem(
        `--provider=${chosen} and --model=${name} disagree; the ${chosen} provider has one model, ${chosen}`,
      );
    for (const remoteOnly of [
      "model-base-url",
      "model-api-key-env",
      "model-stall-timeout",
      "model-call-timeout",
      "model-max-output-tokens",
    ]) {
      const source = read.setting(remoteOnly);
      if (source) throw new ConfigProblem(`${source.from} applies to remote providers only, not ${chosen}`);
    }
  }
  if (chosen === "echo") return { provider: "echo", name: "echo" };
  if (chosen === "scripted") {
    const script = need(read.string("script", ""));
    if (script === "")
      throw new ConfigProblem('model "scripted" requires --script (path to a recorded-turns JSONL file)');
    // Refused now rather than as a config_error on every turn.
    if (!existsSync(isAbsolute(script) ? script : join(cwd, script)))
      throw new ConfigProblem(`${read.from("script")}: ${script} does not exist`);
    return {
      provider: "scripted",
      name: "scripted",
      scriptPath: script,
      scriptStrict: need(read.bool("script-strict", false)),
    };
  }
  return remoteModelSpec(read, chosen, name);
}

/** A model id alone names its provider when its family is unmistakable; otherwise say which flag is missing. */
function inferProvider(name: string): RemoteProvider {
  if (/^(gpt-|chatgpt-|o\d)/.test(name)) return "openai";
  if (name.startsWith("claude-")) return "anthropic";
  if (name.startsWith("gemini-")) return "google";
  throw new ConfigProblem(
    `--model=${name}: name its provider with --provider (${Object.keys(REMOTE_PROVIDERS).join(", ")})`,
  );
}

function remoteModelSpec(read: SettingReader, provider: RemoteProvider, name: string): ModelSpec {
  if (name === "" || name === "echo" || name === "scripted" || /\s/.test(name)) {
    throw new ConfigProblem(
      `--provider=${provider} needs --model with the provider's model id (for example ${EXAMPLE_MODELS[provider]})`,
    );
  }
  const spec: ModelSpec = { provider, name };
  const baseUrl = need(read.string("model-base-url", ""));
  if (baseUrl !== "") {
    const from = read.from("model-base-url");
    let parsed: URL;
    try {
      parsed = new URL(baseUrl);
    } catch {
      throw new ConfigProblem(`${from} is not a URL (expected like http://127.0.0.1:8000/v1)`);
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
      throw new ConfigProblem(`${from} must be an http or https URL`);
    if (parsed.username !== "" || parsed.password !== "")
      throw new ConfigProblem(
        `${from} must not carry credentials; put the key in the variable named by --model-api-key-env`,
      );
    spec.baseUrl = baseUrl.replace(/\/+$/, "");
  } else if (provider === "openai-compatible") {
    throw new ConfigProblem(
      "--provider=openai-compatible needs --model-base-url (model.base_url), e.g. http://127.0.0.1:8000/v1",
    );
  }
  const keyEnv = need(read.string("model-api-key-env", ""));
  if (keyEnv !== "") {
    // Never echo the value: someone may have pasted the key itself.
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(keyEnv)) {
      throw new ConfigProblem(
        `${read.from("model-api-key-env")} takes the name of an environment variable (like OPENAI_API_KEY), not the key`,
      );
    }
    spec.apiKeyEnv = keyEnv;
  }
  if (read.setting("model-stall-timeout")) spec.stallTimeoutMs = need(read.duration("model-stall-timeout", 0));
  if (read.setting("model-call-timeout")) spec.callTimeoutMs = need(read.duration("model-call-timeout", 0));
  if (read.setting("model-max-output-tokens")) spec.maxOutputTokens = need(read.int("model-max-output-tokens", 0));
  return spec;
}

const EXAMPLE_MODELS: Readonly<Record<RemoteProvider, string>> = {
  openai: "gpt-5-mini",
  anthropic: "claude-sonnet-4-5",
  google: "gemini-2.5-flash",
  "openai-compatible": "the id your server lists at /v1/models",
};
