/**
 * How the static checks classify a tool name (docs/svc-workloads.md#tool-classification): engine
 * control calls are read-only, then the bundle's `tool_catalog.tools[].mutating` overrides, then
 * the built-in classes (`invoke_specialist` and `run_shape_*` spawn sub-runs, `invoke_remote_agent`
 * mutates, `request_operator_input` reads), and everything else mutates. Pure.
 */
import type { ToolOverride } from "./workload.ts";

export type MutationClass = "read_only" | "mutating" | "spawns_sub_run";

const ENGINE_CONTROL = new Set([
  "adk_request_input",
  "adk_request_credential",
  "adk_request_confirmation",
  "finish_task",
  "transfer_to_agent",
  "task_completed",
  "exit_loop",
  "pause_session",
]);

export function mutationClass(tool: string, overrides: readonly ToolOverride[]): MutationClass {
  if (ENGINE_CONTROL.has(tool)) return "read_only";
  const override = overrides.find((entry) => entry.name === tool);
  if (override?.mutating !== undefined) return override.mutating ? "mutating" : "read_only";
  if (tool === "invoke_specialist" || tool.startsWith("run_shape_")) return "spawns_sub_run";
  if (tool === "request_operator_input") return "read_only";
  return "mutating";
}

export function isMutating(tool: string, overrides: readonly ToolOverride[]): boolean {
  return mutationClass(tool, overrides) === "mutating";
}
