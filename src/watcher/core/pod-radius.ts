/**
 * The `radius` section of a workload's pods (docs/watcher-pipeline.md#enrichment-bundle; D432,
 * D442): a count line (pods, Ready, namespaces) under the envelope of whatever the pods belong to,
 * then one line per pod not Ready (at most `RADIUS_POD_LINES`). Shared by the pod, workload and
 * node gatherers, with the pod readings they need and a workload's `matchLabels` selector. Pure.
 */
import { logfmtLine } from "./logfmt.ts";

type Json = Record<string, unknown>;
type Envelope = { namespace: string; kind_of_object: string; name: string };

/** Pods listed one per line in `radius` (those not Ready); the count line covers all. */
export const RADIUS_POD_LINES = 10;

export function isReady(pod: Json): boolean {
  const conditions = ((pod.status as Json | undefined)?.conditions as Json[] | undefined) ?? [];
  return conditions.some((condition) => condition.type === "Ready" && condition.status === "True");
}

function waitingReason(pod: Json): string | undefined {
  for (const status of ((pod.status as Json | undefined)?.containerStatuses as Json[] | undefined) ?? []) {
    const reason = ((status.state as Json | undefined)?.waiting as Json | undefined)?.reason;
    if (reason) return String(reason);
  }
  return undefined;
}

function restarts(pod: Json): number {
  const statuses = ((pod.status as Json | undefined)?.containerStatuses as Json[] | undefined) ?? [];
  return statuses.reduce((sum, status) => sum + Number(status.restartCount ?? 0), 0);
}

/** `radius`: how many pods, how many Ready, then each pod not Ready. */
export function podRadius(pods: readonly Json[], envelope: Envelope): string[] {
  const notReady = pods.filter((pod) => !isReady(pod));
  const namespaces = new Set(pods.map((pod) => String((pod.metadata as Json | undefined)?.namespace ?? "")));
  const lines = [
    logfmtLine({ kind: "radius.pods", severity: notReady.length > 0 ? "warning" : "info", ...envelope }, [
      ["section", "radius"],
      ["pods", pods.length],
      ["ready", pods.length - notReady.length],
      ["namespaces", namespaces.size],
    ]),
  ];
  for (const pod of notReady.slice(0, RADIUS_POD_LINES)) {
    const metadata = (pod.metadata ?? {}) as Json;
    const reason = waitingReason(pod);
    lines.push(
      logfmtLine(
        {
          kind: "radius.pod",
          severity: reason ? "critical" : "warning",
          namespace: String(metadata.namespace ?? ""),
          kind_of_object: "Pod",
          name: String(metadata.name ?? ""),
          ...(reason ? { reason } : {}),
        },
        [
          ["section", "radius"],
          ["phase", String((pod.status as Json | undefined)?.phase ?? "")],
          ["node", String((pod.spec as Json | undefined)?.nodeName ?? "")],
          ["restarts", restarts(pod)],
        ],
      ),
    );
  }
  return lines;
}

/** A workload's `spec.selector.matchLabels` as a label selector (`app=web,tier=db`), if it has one. */
export function labelSelector(object: Json): string | undefined {
  const labels = ((object.spec as Json | undefined)?.selector as Json | undefined)?.matchLabels as
    | Record<string, string>
    | undefined;
  const pairs = Object.entries(labels ?? {}).map(([key, value]) => `${key}=${value}`);
  return pairs.length > 0 ? pairs.join(",") : undefined;
}
