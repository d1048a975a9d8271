/**
 * The flag table of `spar svc`, the workflow daemon (docs/flags.md#the-daemon, generated from it):
 * its own settings (workload, dispatch, the four listeners, the store, the one-shot timeout, boot
 * auto-resume, watchdog, log level) under `svc.*` config keys, followed by the tables it shares
 * with the agent daemon, which keep their keys: the model settings, pricing, the MCP timeouts (the
 * catalog comes from the workload, not `--mcp-config`), the listener limits and telemetry. Each
 * entry declares its config key, default, bounds and choices (D229); svc-config.ts reads them. Data
 * only.
 */
import type { FlagSpec } from "../config/flag-spec.ts";
import { renderHelp } from "../config/flag-parser.ts";
import { DISPATCH_SETTINGS } from "../svc/workload/bundle-schema.ts";
import { ATTACH_LIMITS_FLAGS } from "./attach-limits-flags.ts";
import { ATTACH_UI_FLAGS } from "./attach-ui-flags.ts";
import { MCP_FLAGS } from "./mcp-flags.ts";
import { MODEL_FLAGS } from "./model-flags.ts";
import { PRICING_FLAGS } from "./pricing-flags.ts";
import { TELEMETRY_FLAGS } from "./telemetry-flags.ts";
import { POOL_DEFAULT, POOL_MAX, POOL_MIN } from "../store/postgres/postgres-connection.ts";

/**
 * The watchdog ladder (docs/svc.md#the-watchdog-posture); unset takes the workload's
 * `safety.watchdog`, then `feedback`.
 */
export const SVC_WATCHDOG_POSTURES = ["warn", "feedback", "enforce"] as const;

export const SVC_DEFAULT_LISTEN = "127.0.0.1:7777";

const SVC_OWN_FLAGS: readonly FlagSpec[] = [
  {
    name: "workload",
    kind: "string",
    help: "workload: a name found by .agents/ discovery (SVC_CONFIG_DIR, ./.agents, ~/.config/spar/agents, /etc/spar/agents) or the path of a workload directory",
    defaultText: "empty: a trivial single-agent coordinator",
    configKey: "svc.workload",
  },
  {
    name: "dispatch",
    kind: "string",
    help: "dispatch shape: coordinator, graph, fanout (read-only roster, one _synthesis specialist merges), bounded (one single-turn specialist with an output schema) or auto",
    defaultText: "the bundle's dispatch, else coordinator",
    configKey: "svc.dispatch",
    choices: DISPATCH_SETTINGS,
  },
  {
    name: "listen",
    kind: "string",
    help: "address of the main listener (POST /inject, /resume, /abort, GET /metrics); beyond loopback it needs SVC_INJECT_TOKEN or --allow-unauthenticated",
    defaultValue: SVC_DEFAULT_LISTEN,
    configKey: "svc.listen",
  },
  {
    name: "allow-unauthenticated",
    kind: "bool",
    help: "start a main listener bound beyond loopback without SVC_INJECT_TOKEN (anyone who reaches it can inject, resume and abort); command line only",
    defaultValue: "false",
  },
  {
    name: "attach-listen",
    kind: "string",
    help: "operator attach surface (HTTP + SSE), HOST:PORT or unix:/path/sock; needs --session-db; token SVC_ATTACH_TOKEN, required beyond loopback",
    defaultText: "empty: off",
    configKey: "svc.attach.listen",
  },
  {
    name: "a2a-listen",
    kind: "string",
    help: "A2A listener (JSON-RPC, agent cards), e.g. 127.0.0.1:7780; token SVC_A2A_TOKEN, required beyond loopback; rate SVC_A2A_RATE, SVC_A2A_BURST",
    defaultText: "empty: off",
    configKey: "svc.a2a.listen",
  },
  {
    name: "agui-listen",
    kind: "string",
    help: "AG-UI listener (run streams), e.g. 127.0.0.1:7781; token SVC_AGUI_TOKEN, required beyond loopback; rate SVC_AGUI_RATE, SVC_AGUI_BURST",
    defaultText: "empty: off",
    configKey: "svc.agui.listen",
  },
  {
    name: "agui-allowed-origins",
    kind: "string",
    help: "browser origins (scheme://host[:port], comma-separated) allowed to call the AG-UI listener cross-origin (CORS); none by default",
    defaultText: "empty: none",
    configKey: "svc.agui.allowed_origins",
  },
  {
    name: "session-db",
    kind: "string",
    help: "session store: a sqlite file path, or a postgres://user:password@host:port/database URL with --session-db-driver=postgres; empty is in-memory (no durability, no auto-resume)",
    defaultText: "empty: in-memory",
    configKey: "svc.session_db.path",
  },
  {
    name: "session-db-driver",
    kind: "string",
    help: "session store driver: sqlite or postgres (postgres needs a --session-db)",
    defaultValue: "sqlite",
    configKey: "svc.session_db.driver",
    choices: ["sqlite", "postgres"],
  },
  {
    name: "session-db-pool",
    kind: "int",
    help: "connections the postgres store opens, the writer's and the liveness mark's among them (postgres only; at least 3)",
    defaultValue: String(POOL_DEFAULT),
    configKey: "svc.session_db.pool",
    bounds: { min: POOL_MIN, max: POOL_MAX },
  },
  {
    name: "session-db-lease",
    kind: "duration",
    help: "postgres: how long a daemon's hold on an incident lasts unrenewed; another daemon takes the incident over after it (renewed every third)",
    defaultValue: "15s",
    configKey: "svc.session_db.lease",
  },
  {
    name: "timeout",
    kind: "duration",
    help: "one-shot turn deadline (one-shot mode only; 0: none)",
    defaultValue: "5m",
    configKey: "svc.timeout",
  },
  {
    name: "auto-resume",
    kind: "bool",
    help: "at boot, re-drive sessions a stop interrupted (serve mode; needs --session-db)",
    defaultValue: "true",
    configKey: "svc.auto_resume.enabled",
  },
  {
    name: "session-idle-timeout",
    kind: "duration",
    help: "drop a quiet session from memory after this long (it rebuilds from the store on next use)",
    defaultValue: "30m",
    configKey: "svc.session_idle_timeout",
  },
  {
    name: "auto-resume-window",
    kind: "duration",
    help: "auto-resume only sessions interrupted within this window (0: no window)",
    defaultValue: "1h",
    configKey: "svc.auto_resume.window",
  },
  {
    name: "watchdog",
    kind: "string",
    help: "loop watchdog: warn, feedback ([watchdog] note on the next prompt) or enforce (also cancels the turn and refuses later turns until the guardrail reset)",
    defaultText: "the workload's safety.watchdog, else feedback",
    configKey: "svc.watchdog",
    choices: SVC_WATCHDOG_POSTURES,
  },
  {
    name: "log-level",
    kind: "string",
    help: "debug, info, warn or error (JSON logs on stderr)",
    defaultValue: "info",
    configKey: "svc.log.level",
    choices: ["debug", "info", "warn", "error"],
  },
  {
    name: "audit-log",
    kind: "string",
    help: "write-gate audit trail, one JSON line per adjudication (appended, file mode 0600)",
    defaultText: "stderr",
    configKey: "svc.audit_log",
  },
  { name: "version", kind: "bool", help: "print the version and exit" },
  {
    name: "config",
    kind: "string",
    help: "config file (JSON or YAML; svc's own keys under svc.*)",
    defaultText: ".agents/svc.json or .agents/svc.yaml",
  },
];

/** The MCP timeouts; the catalog is the workload's mcp.json (D227), so `--mcp-config` is not svc's. */
const SVC_MCP_FLAGS = MCP_FLAGS.filter((spec) => spec.name !== "mcp-config");

export const SVC_FLAGS: readonly FlagSpec[] = [
  ...SVC_OWN_FLAGS,
  ...MODEL_FLAGS,
  ...PRICING_FLAGS,
  ...SVC_MCP_FLAGS,
  ...ATTACH_LIMITS_FLAGS,
  ...ATTACH_UI_FLAGS,
  ...TELEMETRY_FLAGS,
];

export const SVC_USAGE = "spar svc [--workload=NAME|DIR] [--listen=HOST:PORT] [--session-db=PATH] [flags]";
export const SVC_SUMMARY =
  "Runs the workflow daemon: workloads, the write gate that parks every mutating call for approval, and its listeners.\n" +
  "Example: SVC_INJECT_TOKEN=... spar svc --workload=./triage --session-db=.agents/state/svc.db --listen=127.0.0.1:7777";

/** What `spar svc --help` prints. */
export function svcHelp(): string {
  return renderHelp(SVC_USAGE, SVC_SUMMARY, SVC_FLAGS);
}
