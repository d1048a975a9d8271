/**
 * The kubelet stats the fake serves through the node proxy: `GET
 * /api/v1/nodes/<node>/proxy/stats/summary`, authorized as `get nodes/proxy` on that node (as the
 * apiserver does), 404 for a node not in the store or another proxied path. The PVC volume usage
 * per node is what the scenario set (`scenario.setVolumeUsage`); a node with none has no pods in
 * its summary.
 */
import type { AccessControl } from "./access.ts";
import { type VolumeUsageInput, statsSummary } from "./builders-metrics.ts";
import { failure, jsonResponse, notFound, statusResponse } from "./status.ts";
import type { ObjectStore } from "./store.ts";

const PROXY = /^\/api\/v1\/nodes\/([^/]+)\/proxy(\/.*)?$/;

export class NodeStats {
  /** node → `namespace/claim` → usage. */
  readonly #volumes = new Map<string, Map<string, VolumeUsageInput>>();

  set(input: VolumeUsageInput): void {
    const volumes = this.#volumes.get(input.node) ?? new Map<string, VolumeUsageInput>();
    volumes.set(`${input.namespace ?? "default"}/${input.claim}`, { ...input });
    this.#volumes.set(input.node, volumes);
  }

  /** A claim no longer mounted on the node. */
  remove(node: string, namespace: string, claim: string): void {
    this.#volumes.get(node)?.delete(`${namespace}/${claim}`);
  }

  clear(): void {
    this.#volumes.clear();
  }

  /** The answer to a node-proxy path, or undefined when the path is not one. */
  serve(method: string, pathname: string, user: string, parts: { access: AccessControl; store: ObjectStore }) {
    const match = PROXY.exec(pathname);
    if (!match) return undefined;
    const node = decodeURIComponent(match[1] ?? "");
    const attributes = {
      user,
      verb: method === "GET" ? "get" : method.toLowerCase(),
      group: "",
      resource: "nodes",
      subresource: "proxy",
      namespace: "",
      name: node,
    };
    if (!parts.access.allows(attributes)) return statusResponse(parts.access.forbidden(attributes));
    if (!parts.store.get("nodes", "", node)) return notFound("nodes", node, "");
    if (method !== "GET" || match[2] !== "/stats/summary")
      return failure(404, "the server could not find the requested resource");
    const volumes = [...(this.#volumes.get(node)?.values() ?? [])];
    const podUid = (namespace: string, pod: string) => {
      const metadata = (parts.store.get("pods", namespace, pod)?.metadata ?? {}) as { uid?: unknown };
      return typeof metadata.uid === "string" ? metadata.uid : "";
    };
    return jsonResponse(statsSummary(node, volumes, podUid));
  }
}
