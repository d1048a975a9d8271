/**
 * Reads the tool-server catalog file (`mcp.json`) from disk and parses it (catalog.ts): the one
 * place a catalog is read, for the agent's `--mcp-config` and a workload's tool servers.
 */
import { readFileSync } from "node:fs";
import { type Result, err, ok } from "../core/result.ts";
import { type McpCatalog, parseCatalog } from "./catalog.ts";

/** Read the catalog file: undefined when it is absent and not required. */
export function loadCatalogFile(
  path: string,
  required: boolean,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Result<McpCatalog | undefined> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if (!required && (error as NodeJS.ErrnoException).code === "ENOENT") return ok(undefined);
    return err(`mcp.json ${path}: cannot read it (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  return parseCatalog(text, path, env);
}
