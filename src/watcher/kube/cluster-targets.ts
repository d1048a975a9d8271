/**
 * Which clusters one watcher process watches (`--clusters`, `--clusters-from`:
 * docs/watcher.md#flags): by default the one cluster of `--in-cluster` / `--kubeconfig`, named by
 * `--cluster-name`; `--clusters=name=endpoint` reuses those credentials against each endpoint (a
 * bare endpoint is named by its first DNS label); `--clusters-from=kubeconfig[:PATH]` is one
 * cluster per context of the kubeconfig (PATH, else `--kubeconfig`, else the standard search path),
 * named by the context. Discovery through a cloud provider (`project`, `project/location`) needs a
 * fleet-capable build: refused.
 */
import type { ClusterTarget } from "../watcher-config.ts";
import { type KubeConnection, loadKubeConnection } from "./kube-connection.ts";
import { readKubeconfig } from "./kubeconfig-file.ts";

export interface ResolvedCluster {
  name: string;
  connection: KubeConnection;
}

export interface ClusterSelection {
  clusterName: string;
  inCluster: boolean | undefined;
  kubeconfig: string | undefined;
  clusters: readonly ClusterTarget[];
  clustersFrom: string | undefined;
}

export class ClusterSelectionError extends Error {}

function withScheme(endpoint: string): string {
  return /^https?:\/\//i.test(endpoint) ? endpoint.replace(/\/+$/, "") : `https://${endpoint.replace(/\/+$/, "")}`;
}

export function resolveClusters(selection: ClusterSelection): ResolvedCluster[] {
  const credentials = { inCluster: selection.inCluster, kubeconfig: selection.kubeconfig };
  if (selection.clusters.length > 0) {
    const base = loadKubeConnection(credentials);
    return selection.clusters.map((target) => ({
      name: target.name,
      connection: { ...base, server: withScheme(target.endpoint) },
    }));
  }
  const from = selection.clustersFrom;
  if (from === undefined) return [{ name: selection.clusterName, connection: loadKubeConnection(credentials) }];
  if (from !== "kubeconfig" && !from.startsWith("kubeconfig:")) {
    throw new ClusterSelectionError(
      `--clusters-from=${from}: discovery through a cloud provider needs a fleet-capable build; use --clusters-from=kubeconfig or --clusters`,
    );
  }
  const path = from.startsWith("kubeconfig:") ? from.slice("kubeconfig:".length) : selection.kubeconfig;
  const contexts = readKubeconfig(path).contexts;
  if (contexts.length === 0) throw new ClusterSelectionError(`--clusters-from=${from}: the kubeconfig has no contexts`);
  const names = new Set<string>();
  return contexts.map((context) => {
    if (names.has(context.name))
      throw new ClusterSelectionError(`--clusters-from=${from}: context ${context.name} appears twice`);
    names.add(context.name);
    return {
      name: context.name,
      connection: loadKubeConnection({ inCluster: false, kubeconfig: path, context: context.name }),
    };
  });
}

/** A per-cluster path from a stem (`dedup.json` → `dedup.prod.json`); unchanged for a single cluster. */
export function perClusterPath(path: string, cluster: string, multi: boolean): string {
  if (!multi) return path;
  const safe = cluster.replace(/[^A-Za-z0-9._-]/g, "_");
  const slash = path.lastIndexOf("/");
  const dot = path.lastIndexOf(".");
  return dot > slash + 1 ? `${path.slice(0, dot)}.${safe}${path.slice(dot)}` : `${path}.${safe}`;
}
