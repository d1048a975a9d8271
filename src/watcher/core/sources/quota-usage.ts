/**
 * What the quota source judges: one quota's usage against its limit, from whichever provider
 * (D398). `QuotaProvider` is the interface a provider implements: it lists every quota's usage
 * now. The portable provider reads Kubernetes ResourceQuotas (`status.hard` against
 * `status.used`, one usage per resource of each quota; `resourceQuotaUsages` here is its pure
 * reading of a list, the host's provider does the paged list); a cloud provider's quota API
 * would be another implementation. None ships. Pure.
 */
import { parseQuantity } from "../quantity.ts";
import type { KubeObject } from "../source-spec.ts";
import { field, meta } from "./source-fields.ts";

export interface QuotaUsage {
  /** `quota:<scope>/<name>`; for a ResourceQuota `quota:<namespace>/<quota>/<resource>` (D398). */
  uid: string;
  /** "" for a quota that is not namespaced (a cloud project's). */
  namespace: string;
  /** `ResourceQuota`, or the provider's own word (`Quota`). */
  kindOfObject: string;
  /** The object that holds the quota (the ResourceQuota's name). */
  name: string;
  /** What is limited (`requests.cpu`, `pods`, `CPUS`). */
  resource: string;
  /** In the resource's base unit (cores, bytes, counts). */
  used: number;
  hard: number;
  /** As the provider wrote them, for messages (`1500m`, `2`). */
  usedText: string;
  hardText: string;
}

/** A source of quota usages: the Kubernetes ResourceQuota one, or a cloud's (none ships). */
export interface QuotaProvider {
  /** For log lines (`resourcequotas`). */
  readonly name: string;
  /** Every quota's usage now; rejects when the provider cannot be read (nothing is judged then). */
  usages(): Promise<QuotaUsage[]>;
}

function quantities(object: KubeObject, key: "hard" | "used"): Record<string, unknown> {
  const value = field(object, "status", key);
  return value !== null && typeof value === "object" ? (value as Record<string, unknown>) : {};
}

/** Every resource of every ResourceQuota in a list answer, with an unreadable quantity left out. */
export function resourceQuotaUsages(body: unknown): QuotaUsage[] {
  const items = (body as { items?: unknown } | undefined)?.items;
  if (!Array.isArray(items)) return [];
  return (items as KubeObject[]).flatMap((item) => {
    const { namespace, name } = meta(item);
    const used = quantities(item, "used");
    return Object.entries(quantities(item, "hard")).flatMap(([resource, hardText]) => {
      const hard = parseQuantity(hardText);
      const usedText = used[resource] ?? "0";
      const value = parseQuantity(usedText);
      if (hard === undefined || value === undefined) return [];
      return [
        {
          uid: `quota:${namespace}/${name}/${resource}`,
          namespace,
          kindOfObject: "ResourceQuota",
          name,
          resource,
          used: value,
          hard,
          usedText: String(usedText),
          hardText: String(hardText),
        },
      ];
    });
  });
}
