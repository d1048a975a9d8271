/**
 * What resolving `--workload` finds before dispatch and the static checks: the bundle, its composed
 * spec set, where `mcp.json` lives, the config root's remote agents, and lines for the log.
 */
import type { BundleFile } from "./bundle-file.ts";
import type { RemoteAgent, Specialist, WorkloadSource } from "./workload.ts";

export interface LocatedBundle {
  bundle: BundleFile;
  /** The bundle's file, as errors name it. */
  bundleFile: string;
  specialists: Specialist[];
  source: WorkloadSource;
  mcpCatalogPath: string;
  remoteAgents: RemoteAgent[];
  notices: string[];
  warnings: string[];
}
