/**
 * The main <-> tool-host worker protocol: the only thing that crosses that boundary. Calls go
 * in with a request id and come back as results; a cancel aborts one call (its child processes
 * are killed); shutdown kills everything still running and answers `closed`. Pure types.
 *
 * Seam for tool servers: the worker runs builtins by name; MCP clients living in the same
 * worker add their own messages (listing, status) next to these, bumping the version.
 */
import type { ToolCall } from "../core/events.ts";
import type { ToolRunResult } from "./channel.ts";

export const TOOL_HOST_VERSION = 1;

export interface ToolHostSettings {
  /** Absolute real path of the workspace root file tools and bash work in. */
  root: string;
  /** Builtin tools turned off (`tools.disable`). */
  disabled: string[];
  /** Environment variables holding the daemon's own secrets (attach token, model API key): never passed to commands. */
  hiddenEnv?: string[];
}

export type ToToolHost =
  | { type: "hello"; version: number; settings: ToolHostSettings }
  | { type: "run"; id: number; call: ToolCall }
  | { type: "cancel"; id: number }
  | { type: "shutdown" };

export type FromToolHost =
  | { type: "ready"; version: number }
  | { type: "result"; id: number; result: ToolRunResult }
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
