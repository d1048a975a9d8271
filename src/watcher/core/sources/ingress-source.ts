/**
 * The ingress source (D387): its own Event watch, Warning events only, turned into the ingress
 * controller's failures: reasons `Sync` and `Translate` on an Ingress (`ingress.sync_failed`,
 * `ingress.translate_failed`), `SyncNetworkEndpointGroupFailed`, `AttachFailed`, `DetachFailed`
 * and `RetryFailed` on a Service (`ingress.neg_failed`); all warning. The first list is history
 * and emits nothing, as for cluster-events; every later add or update is an occurrence the
 * dispatcher's dedup counts. It keeps no state. Pure.
 */
import type { Signal } from "../signal.ts";
import type { Detector, KubeObject, SourceSpec } from "../source-spec.ts";

const NEG_REASONS = new Set(["SyncNetworkEndpointGroupFailed", "AttachFailed", "DetachFailed", "RetryFailed"]);

/** The ingress kind an event stands for, or undefined when it is not one of ours. */
export function ingressKind(event: KubeObject): string | undefined {
  if (event.type !== "Warning") return undefined;
  const involved = (event.involvedObject ?? {}) as { kind?: string };
  if (involved.kind === "Ingress" && event.reason === "Sync") return "ingress.sync_failed";
  if (involved.kind === "Ingress" && event.reason === "Translate") return "ingress.translate_failed";
  if (involved.kind === "Service" && NEG_REASONS.has(String(event.reason))) return "ingress.neg_failed";
  return undefined;
}

export function ingressDetector(): Detector {
  return {
    observe(_watch, change, event, now, initial): Signal[] {
      if (initial || change === "delete") return [];
      const kind = ingressKind(event);
      if (!kind) return [];
      const involved = (event.involvedObject ?? {}) as {
        kind?: string;
        namespace?: string;
        name?: string;
        uid?: string;
      };
      const namespace = involved.namespace ?? "";
      const name = involved.name ?? "";
      const uid = involved.uid || `${String(involved.kind).toLowerCase()}:${namespace}/${name}`;
      return [
        {
          kind,
          reason: kind.slice("ingress.".length),
          namespace,
          kindOfObject: involved.kind ?? "",
          name,
          uid,
          message: `${String(event.reason)}: ${String(event.message ?? "")}`,
          eventCount: 1,
          firstSeen: now,
          lastSeen: now,
          type: "",
          severity: "warning",
        },
      ];
    },
  };
}

export const INGRESS_SPEC: SourceSpec<Record<string, never>> = {
  name: "ingress",
  reasons: ["sync_failed", "translate_failed", "neg_failed"],
  scope: "cluster",
  required: [
    { verb: "list", group: "", resource: "events" },
    { verb: "watch", group: "", resource: "events" },
  ],
  watches: [{ name: "events", path: "/api/v1/events", fieldSelector: "type=Warning" }],
  detector: () => ingressDetector(),
};
