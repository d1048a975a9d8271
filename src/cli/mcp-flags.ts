/**
 * The tool-server flags and config keys: where the `mcp.json` catalog is (`.agents/mcp.json` unless
 * `--mcp-config` says otherwise, D23) and the start, call and stop timeouts. Also loads the
 * catalog: a missing default file means no tool servers, a missing named file or a bad one is a
 * startup error naming the key. Tool servers are not wired under the `echo` model
 * (docs/configuration.md#tool-server-catalog-mcpjson). Owns no MCP behaviour (src/mcp/).
 */
import { resolve } from "node:path";
import { type Result, err, ok } from "../core/result.ts";
import type { McpCatalog } from "../mcp/catalog.ts";
import { loadCatalogFile } from "../mcp/catalog-file.ts";
import { DEFAULT_MCP_TIMEOUTS, type McpTimeouts } from "../mcp/types.ts";
import type { FlagSpec, FlagValue } from "../config/flag-spec.ts";
import { SettingReader } from "../config/setting-reader.ts";

export const MCP_FLAGS: readonly FlagSpec[] = [
  {
    name: "mcp-config",
    kind: "string",
    help: "tool-server catalog (mcp.json); not read under --model=echo",
    defaultText: ".agents/mcp.json (none when absent)",
    configKey: "mcp.config",
  },
  {
    name: "mcp-start-timeout",
    kind: "duration",
    help: "a tool server must start, initialize and list its tools within this",
    defaultText: "30s",
    configKey: "mcp.start_timeout",
    bounds: { min: 1 },
  },
  {
    name: "mcp-call-timeout",
    kind: "duration",
    help: "one tool-server call fails after this",
    defaultText: "5m",
    configKey: "mcp.call_timeout",
    bounds: { min: 1 },
  },
  {
    name: "mcp-retry-interval",
    kind: "duration",
    help: "a tool server whose start failed is tried again, when a turn starts or /tools is read, at most this often",
    defaultText: "30s",
    configKey: "mcp.retry_interval",
    bounds: { min: 1 },
  },
  {
    name: "mcp-stop-grace",
    kind: "duration",
    help: "at shutdown, between SIGTERM and SIGKILL of a stdio tool server",
    defaultText: "2s",
    configKey: "mcp.stop_grace",
    bounds: { min: 1 },
  },
];

export interface McpSettings {
  /** Absolute path of the catalog file. */
  path: string;
  /** Named by flag or config key: it must exist (and must keep existing on reload). */
  required: boolean;
  timeouts: McpTimeouts;
  /** The catalog as loaded at startup; undefined when the default file is absent. */
  catalog: McpCatalog | undefined;
}

/** A positive duration (the MCP timeouts may not be 0). */
function duration(read: SettingReader, name: string, fallback: number): Result<number> {
  const value = read.duration(name, fallback);
  return value.ok ? value : err(`${read.from(name)} must be a positive duration such as 30s or 5m`);
}

/** Undefined under the echo model (tool servers are not wired there). */
export function resolveMcpSettings(
  flags: ReadonlyMap<string, FlagValue>,
  config: ReadonlyMap<string, unknown>,
  cwd: string,
  provider: string,
): Result<McpSettings | undefined> {
  const read = new SettingReader(MCP_FLAGS, flags, config);
  const where = read.setting("mcp-config");
  if (where !== undefined && (typeof where.value !== "string" || where.value.trim() === ""))
    return err(`${where.from} must be a file path`);
  const timeouts = resolveMcpTimeouts(flags, config);
  if (!timeouts.ok) return timeouts;
  if (provider === "echo") return ok(undefined);
  const path = resolve(cwd, where === undefined ? ".agents/mcp.json" : String(where.value).trim());
  const required = where !== undefined;
  const catalog = loadCatalogFile(path, required);
  if (!catalog.ok) return catalog;
  return ok({ path, required, timeouts: timeouts.value, catalog: catalog.value });
}

/** The start, call, stop and retry timeouts alone (svc takes its catalog from the workload, D227). */
export function resolveMcpTimeouts(
  flags: ReadonlyMap<string, FlagValue>,
  config: ReadonlyMap<string, unknown>,
): Result<McpTimeouts> {
  const read = new SettingReader(MCP_FLAGS, flags, config);
  const timeouts: McpTimeouts = { ...DEFAULT_MCP_TIMEOUTS };
  for (const [name, key] of [
    ["mcp-start-timeout", "startMs"],
    ["mcp-call-timeout", "callMs"],
    ["mcp-stop-grace", "stopGraceMs"],
    ["mcp-retry-interval", "retryMs"],
  ] as const) {
    const value = duration(read, name, DEFAULT_MCP_TIMEOUTS[key]);
    if (!value.ok) return value;
    timeouts[key] = value.value;
  }
  return ok(timeouts);
}
