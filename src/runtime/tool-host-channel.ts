/**
 * The main <-> tool-host worker protocol: the only thing that crosses that boundary. Calls go
 * in with a request id and come back as results; a cancel aborts one call (its child processes
 * are killed); shutdown kills everything still running and answers `closed`. Pure types.
 *
 * Tool servers (v2): the worker holds the MCP clients. `mcp-configure` applies a catalog (stop
 * changed or removed servers), `mcp-discover` starts and lists servers; both answer `mcp-state`
 * with the same request id. A run naming `mcp` goes to that server's tool instead of a builtin.
 */
import type { ToolCall } from "../core/events.ts";
import type { McpServerState, McpWorkerConfig } from "../mcp/types.ts";
import type { ToolRunResult } from "./channel.ts";

export const TOOL_HOST_VERSION = 2;

export interface ToolHostSettings {
  /** Absolute real path of the workspace root file tools and bash work in. */
  root: string;
  /** Builtin tools turned off (`tools.disable`). */
  disabled: string[];
  /** Environment variables holding the daemon's own secrets (attach token, model API key): never passed to commands. */
  hiddenEnv?: string[];
  /** Variables (or `PREFIX_*` patterns) bash gets besides the default allow list (`tools.env_passthrough`). */
  envPassthrough?: string[];
  /** The outbound allow list of fetch_url (`outbound.allow`), entries already validated at startup. */
  outboundAllow?: string[];
  /** The tool-server catalog and timeouts; absent: no MCP. */
  mcp?: McpWorkerConfig;
}

export type ToToolHost =
  | { type: "hello"; version: number; settings: ToolHostSettings }
  | { type: "run"; id: number; call: ToolCall; mcp?: { server: string; tool: string } }
  | { type: "mcp-configure"; id: number; config: McpWorkerConfig }
  | { type: "mcp-discover"; id: number; names?: string[] }
  | { type: "cancel"; id: number }
  | { type: "shutdown" };

export type FromToolHost =
  | { type: "ready"; version: number }
  | { type: "result"; id: number; result: ToolRunResult }
  | { type: "mcp-state"; id: number; servers: McpServerState[] }
  | { type: "closed" };

function typed(value: unknown): boolean {
  return typeof value === "object" && value !== null && typeof (value as { type?: unknown }).type === "string";
}

export function isToToolHost(value: unknown): value is ToToolHost {
  return typed(value);
}

export function isFromToolHost(value: unknown): value is FromToolHost {
  return typed(value);
}
