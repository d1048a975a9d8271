/**
 * How the permission gate classifies a tool by name when its source declares nothing: `bash` is
 * shell; file writes, edits and deletes are edits; reads and fetch_url are read-only; anything
 * unknown is mutating (the safe default). The builtin tools declare the same classes themselves
 * (src/tools/, checked equal by a test); MCP tools will declare theirs from their annotations.
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
