/**
 * Shapes shared by the MCP code on both sides of the tool-host worker boundary (structured-clone
 * safe: plain data only). Pure types plus the client identity.
 */
import type { ServerConfig } from "./catalog.ts";

export const SPAR_CLIENT = { name: "spar", version: "1" };

/** A server's status on GET /mcp: `idle` (not started yet), `starting`, `ready`, `failed`, `stopped`. */
export type McpStatus = "idle" | "starting" | "ready" | "failed" | "stopped";

export interface McpToolInfo {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
}

export interface McpServerState {
  name: string;
  transport: "stdio" | "http";
  status: McpStatus;
  /** Why the last start or the connection failed. */
  error?: string;
  /** Known once listed. */
  tools?: McpToolInfo[];
  /** The stdio child's pid while it runs. */
  pid?: number;
}

export interface McpTimeouts {
  /** Connect, initialize and list tools. */
  startMs: number;
  /** One tool call. */
  callMs: number;
  /** Between SIGTERM and SIGKILL at stop. */
  stopGraceMs: number;
  /** A server whose start failed is tried again (on a turn or a /tools read) at most this often. */
  retryMs: number;
}

export const DEFAULT_MCP_TIMEOUTS: McpTimeouts = {
  startMs: 30_000,
  callMs: 300_000,
  stopGraceMs: 2_000,
  retryMs: 30_000,
};

/** What the worker is told: the servers and timeouts; it diffs against what it holds. */
export interface McpWorkerConfig {
  servers: ServerConfig[];
  timeouts: McpTimeouts;
}

/** A call's outcome, the same shape as the runtime's ToolRunResult (src/mcp sits below runtime). */
export interface McpRunResult {
  output: Record<string, unknown>;
  isError: boolean;
}
