/**
 * The flag table of `spar agent`: the daemon's own settings (listener, store, model, turns,
 * permissions) followed by the tables of each part it spreads (guardrails, peer hub, agent card,
 * pricing, tools, skills and memory, MCP, listener limits). Each entry declares its config key,
 * default, bounds and choices (src/config/flag-spec.ts); agent-config.ts reads them. Data only.
 */
import type { FlagSpec } from "../config/flag-spec.ts";
import { AGENT_CARD_FLAGS } from "../surfaces/attach/agent-card-config.ts";
import { PEER_FLAGS } from "../surfaces/peers/peer-flags.ts";
import { PEER_CLIENT_FLAGS } from "../peers-client/peer-client-flags.ts";
import { ATTACH_LIMITS_FLAGS } from "./attach-limits-flags.ts";
import { ATTACH_UI_FLAGS } from "./attach-ui-flags.ts";
import { GUARDRAIL_FLAGS } from "./guardrail-flags.ts";
import { KNOWLEDGE_FLAGS } from "./knowledge-flags.ts";
import { MCP_FLAGS } from "./mcp-flags.ts";
import { MODEL_FLAGS } from "./model-flags.ts";
import { PRICING_FLAGS } from "./pricing-flags.ts";
import { TELEMETRY_FLAGS } from "./telemetry-flags.ts";
import { TOOLS_FLAGS } from "./tools-flags.ts";
import { POOL_DEFAULT, POOL_MAX, POOL_MIN } from "../store/postgres/postgres-connection.ts";

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
    help: "bearer-token table of callers (JSON or YAML; format: docs/configuration.md#caller-table-file): turns on multi-session auth",
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
    help: "session store: a sqlite file path, or a postgres://user:password@host:port/database URL with --session-db-driver=postgres",
    defaultText: ".agents/state/sessions.db",
    configKey: "session_db.path",
  },
  {
    name: "session-db-max-mb",
    kind: "int",
    help: "cap the sqlite store at this many MiB; writes past it answer 503 and change nothing (0: no cap; sqlite only)",
    defaultValue: "0",
    configKey: "session_db.max_mb",
    bounds: { min: 0, max: 1_048_576 },
  },
  {
    name: "session-db-driver",
    kind: "string",
    help: "session store driver: sqlite or postgres (postgres needs a postgres:// --session-db; several daemons may share it)",
    defaultValue: "sqlite",
    configKey: "session_db.driver",
    choices: ["sqlite", "postgres"],
  },
  {
    name: "session-db-lease",
    kind: "duration",
    help: "postgres: how long a daemon's hold on a session lasts unrenewed; another daemon takes the session over after it (renewed every third)",
    defaultValue: "15s",
    configKey: "session_db.lease",
  },
  {
    name: "session-db-pool",
    kind: "int",
    help: "connections the postgres store opens, the writer's and the liveness mark's among them (postgres only; at least 3)",
    defaultValue: String(POOL_DEFAULT),
    configKey: "session_db.pool",
    bounds: { min: POOL_MIN, max: POOL_MAX },
  },
  ...MODEL_FLAGS,
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
    name: "plans-dir",
    kind: "string",
    help: "root of the sessions' plan files (<dir>/<session id>/plan-<seq>.md; /slash/replan archives the active one)",
    defaultText: "<tools root>/.agents/plans",
    configKey: "agent.plans_dir",
  },
  {
    name: "wake-loop",
    kind: "bool",
    help: "offer the loop-control tools (schedule_next_turn, return_result, report_alert) and fire scheduled wakes",
    defaultValue: "true",
    configKey: "agent.wake_loop.enabled",
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
  ...PEER_CLIENT_FLAGS,
  ...AGENT_CARD_FLAGS,
  ...PRICING_FLAGS,
  ...TOOLS_FLAGS,
  ...KNOWLEDGE_FLAGS,
  ...MCP_FLAGS,
  ...ATTACH_LIMITS_FLAGS,
  ...ATTACH_UI_FLAGS,
  ...TELEMETRY_FLAGS,
];
