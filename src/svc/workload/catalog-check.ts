/**
 * Reading `mcp.json` for a workload (docs/svc-workloads.md#modes, where it lives) with the one
 * catalog parser (src/mcp/catalog.ts), and the cross-check: every `tool_catalog.mcp[].server` is a
 * server of the catalog. Only called when tool servers are wired (not under `echo`) and the bundle
 * names servers.
 */
import { type McpCatalog, parseCatalog } from "../../mcp/catalog.ts";
import { type Result, err, ok } from "../../core/result.ts";
import type { Environment } from "./config-root.ts";
import { readText } from "./read-text.ts";
import type { Workload } from "./workload.ts";

export function loadWorkloadCatalog(workload: Workload, path: string, env: Environment): Result<McpCatalog> {
  const servers = workload.toolCatalog.mcp.map((entry) => entry.server);
  const source = readText(path);
  if (!source.ok)
    return err(
      `mcp.json ${path}: required: workload "${workload.name}" names MCP servers (${servers.join(", ")}) in tool_catalog.mcp (${source.error})`,
    );
  const catalog = parseCatalog(source.value, path, env);
  if (!catalog.ok) return catalog;
  const missing = servers.filter((server) => !catalog.value.servers.some((defined) => defined.name === server));
  if (missing.length > 0)
    return err(missing.map((server) => `workload references MCP server "${server}" not defined in ${path}`).join("\n"));
  return ok(catalog.value);
}
