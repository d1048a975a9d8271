/**
 * How the permission gate classifies a tool by name when its source declares nothing: `bash` is
 * shell; file writes, edits and deletes are edits; reads and fetch_url are read-only; anything
 * unknown is mutating (the safe default). The builtin tools declare the same classes themselves
 * (src/tools/, checked equal by a test). MCP tools are classed by `classifyMcpTool` from their
 * annotations and the catalog override.
 * Pure.
 */
import type { ToolClass } from "./permission-policy.ts";

const CLASSES: Readonly<Record<string, ToolClass>> = {
  bash: "shell",
  write_file: "edit",
  edit_file: "edit",
  delete_file: "edit",
  read_file: "read-only",
  fetch_url: "read-only",
};

export function classifyTool(name: string): ToolClass {
  return CLASSES[name] ?? "mutating";
}

/** MCP tool annotations as a server declares them (the MCP specification 2025-11-25, `ToolAnnotations`). */
export interface McpAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
}

/**
 * An MCP tool's class: read-only when the catalog override says `mutating: false`, or, with no
 * override, when the server's `readOnlyHint` is true; otherwise mutating (an override of
 * `mutating: true` wins over the hint). `destructiveHint` does not change the class.
 */
export function classifyMcpTool(annotations: McpAnnotations | undefined, override: boolean | undefined): ToolClass {
  if (override !== undefined) return override ? "mutating" : "read-only";
  return annotations?.readOnlyHint === true ? "read-only" : "mutating";
}
