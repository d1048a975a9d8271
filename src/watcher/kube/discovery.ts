/**
 * API discovery for the startup plan (D386): which resources a group/version serves, from
 * `GET /apis/<group>/<version>` (`/api/v1` for the core group). A 404 is an absent group (no
 * resources); any other failure is an error answer (fatal at startup, as an access review's is).
 */
import type { DiscoveryAnswer } from "../core/access-plan.ts";
import { type KubeConnection, kubeFetch } from "./kube-connection.ts";

export async function discoverResources(connection: KubeConnection, groupVersion: string): Promise<DiscoveryAnswer> {
  const path = groupVersion === "v1" ? "/api/v1" : `/apis/${groupVersion}`;
  try {
    const response = await kubeFetch(connection, path, { signal: AbortSignal.timeout(10_000) });
    if (response.status === 404) return { resources: [] };
    if (!response.ok) return { error: `GET ${path}: HTTP ${response.status}` };
    const body = (await response.json()) as { resources?: { name?: unknown }[] };
    return {
      resources: (body.resources ?? [])
        .map((resource) => String(resource.name ?? ""))
        .filter((name) => name !== "" && !name.includes("/")),
    };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}
