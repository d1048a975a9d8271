/**
 * How the permission gate classifies a tool by name until tool sources declare it themselves:
 * `bash` is shell; file writes and edits are edits; reads are read-only; anything unknown is
 * mutating (the safe default). Pure.
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
