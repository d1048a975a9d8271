/**
 * The main <-> tool-host worker channel: the only thing that crosses that boundary. Its
 * vocabulary as types and its version; ids, replies, cancellation and the handshake are the RPC
 * layer's (rpc/). A `run` is answered with the tool's result, a cancel aborts it (its
 * child processes are killed), and `shutdown` kills everything still running, then answers. The
 * handshake's init carries the settings. Pure types plus the channel constant.
 *
 * Tool servers (v2): the worker holds the MCP clients. `mcp-configure` applies a catalog (stop
 * changed or removed servers), `mcp-discover` starts and lists servers; both answer the servers'
 * states, and the worker says `mcp-state` on its own when a server fails or exits. A run naming
 * `mcp` goes to that server's tool instead of a builtin, with its `meta` as the request's `_meta`
 * (an optional field: no version change).
 */
import type { TraceCarrier } from "../core/session-store.ts";
import type { ToolCall } from "../core/events.ts";
import type { McpServerState, McpWorkerConfig } from "../mcp/types.ts";
import type { ToolRunResult } from "../core/tool-catalog.ts";
import {
  type NoNotifications,
  type NoParams,
  type NoRequests,
  type RpcMethod,
  defineChannel,
} from "../rpc/rpc-channel.ts";

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

/** One run: a builtin, or with `mcp` that server's tool, `meta` going out as the request's `_meta`. */
export interface ToolHostRunParams {
  call: ToolCall;
  mcp?: { server: string; tool: string; meta?: Record<string, unknown> };
  /** The calling span's W3C context (tracing on): the worker's outbound requests carry it. */
  trace?: TraceCarrier;
}

/** What the tool-host worker answers. */
export type ToolHostSide = {
  requests: {
    run: RpcMethod<ToolHostRunParams, ToolRunResult>;
    "mcp-configure": RpcMethod<{ config: McpWorkerConfig }, McpServerState[]>;
    "mcp-discover": RpcMethod<{ names?: string[] }, McpServerState[]>;
    /** Abort every run, kill every child process and tool server; answered when done. */
    shutdown: RpcMethod<NoParams, undefined>;
  };
  notifications: NoNotifications;
};

/** What the main thread hears from the tool host. */
export type ToolHostMainSide = {
  requests: NoRequests;
  notifications: {
    /** A server's status changed without a request (it failed or exited). */
    "mcp-state": { servers: McpServerState[] };
  };
};

/** Version 3: the RPC layer's envelope (version 2 was this module's own ids). */
export const TOOL_HOST_CHANNEL = defineChannel<ToolHostMainSide, ToolHostSide, ToolHostSettings>("tool host", 3);
