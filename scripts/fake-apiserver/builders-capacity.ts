/**
 * Builders for what the capacity source reads: nodes of a node group with allocatable CPU and
 * memory, pods with resource requests (bound, or Pending with PodScheduled=False reason
 * Unschedulable since a given time), the cluster-autoscaler's status ConfigMap
 * (`kube-system/cluster-autoscaler-status`, its `status` text in the newer YAML shape or the older
 * plain text) and the autoscaler's events (source component `cluster-autoscaler`). Pure functions
 * returning plain objects; the scenario stores them.
 */
import { type EventInput, type OwnerInput, node, pod } from "./builders.ts";
import type { KubeObject } from "./selectors.ts";
import { kubeTime } from "./store.ts";

export interface CapacityNodeInput {
  name: string;
  /** The node group; written under `poolLabel`. */
  pool: string;
  /** Default `cloud.google.com/gke-nodepool`. */
  poolLabel?: string;
  /** Allocatable quantities, e.g. `4`, `3920m`, `16Gi`. */
  cpu: string;
  memory: string;
  unschedulable?: boolean;
}

export function capacityNode(input: CapacityNodeInput): KubeObject {
  const built = node({
    name: input.name,
    labels: { [input.poolLabel ?? "cloud.google.com/gke-nodepool"]: input.pool },
    ...(input.unschedulable ? { unschedulable: true } : {}),
  });
  const quantities = { cpu: input.cpu, memory: input.memory, pods: "110" };
  return { ...built, status: { ...(built.status as object), capacity: quantities, allocatable: quantities } };
}

export interface CapacityPodInput {
  namespace?: string;
  name: string;
  /** Bound to this node (Running); absent: Pending. */
  node?: string;
  cpu?: string;
  memory?: string;
  /** Pending and unschedulable since this RFC 3339 time (default now when unbound). */
  unschedulableSince?: string;
  /** The scheduler's message on the PodScheduled condition. */
  message?: string;
  owner?: OwnerInput;
}

export function capacityPod(input: CapacityPodInput): KubeObject {
  const built = pod({
    name: input.name,
    ...(input.namespace ? { namespace: input.namespace } : {}),
    ...(input.node ? { node: input.node } : {}),
    ...(input.owner ? { owner: input.owner } : {}),
  });
  const spec = built.spec as { containers: Record<string, unknown>[] };
  const requests = { ...(input.cpu ? { cpu: input.cpu } : {}), ...(input.memory ? { memory: input.memory } : {}) };
  const containers = spec.containers.map((container) => ({ ...container, resources: { requests } }));
  const status = built.status as { conditions: Record<string, unknown>[] };
  const scheduled = input.node
    ? { type: "PodScheduled", status: "True", lastTransitionTime: kubeTime() }
    : {
        type: "PodScheduled",
        status: "False",
        reason: "Unschedulable",
        message: input.message ?? "0/3 nodes are available: 3 Insufficient cpu.",
        lastTransitionTime: input.unschedulableSince ?? kubeTime(),
      };
  const conditions = [scheduled, ...status.conditions.filter((condition) => condition.type !== "PodScheduled")];
  return { ...built, spec: { ...spec, containers }, status: { ...status, conditions } };
}

export interface AutoscalerGroupInput {
  name: string;
  /** `InProgress`, `Backoff`, `NoActivity`, `NeedsScaleUp`, ... */
  scaleUp: string;
  /** RFC 3339 time of the ScaleUp condition's last transition (default now). */
  since?: string;
  ready?: number;
  target?: number;
  /** A backoff's error (YAML shape only). */
  errorCode?: string;
  errorMessage?: string;
}

/** Go's `time.String()` of an RFC 3339 time, as the older text shape writes it. */
function goTime(rfc3339: string): string {
  const iso = new Date(rfc3339).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 23)}000000 +0000 UTC`;
}

/** The newer YAML shape of the status text. */
export function autoscalerStatusYaml(groups: AutoscalerGroupInput[]): string {
  const now = kubeTime();
  const lines = [
    `time: "${goTime(now)}"`,
    "autoscalerStatus: Running",
    "clusterWide:",
    "  scaleUp:",
    "    status: NoActivity",
  ];
  lines.push(groups.length > 0 ? "nodeGroups:" : "nodeGroups: []");
  for (const group of groups) {
    const since = group.since ?? now;
    lines.push(
      `- name: ${JSON.stringify(group.name)}`,
      "  health:",
      "    status: Healthy",
      `    nodeCounts: {registered: {total: ${group.ready ?? 0}, ready: ${group.ready ?? 0}, notStarted: 0}}`,
      `    cloudProviderTarget: ${group.target ?? 0}`,
      "  scaleUp:",
      `    status: ${group.scaleUp}`,
      ...(group.errorCode
        ? [
            "    backoffInfo:",
            `      errorCode: ${JSON.stringify(group.errorCode)}`,
            `      errorMessage: ${JSON.stringify(group.errorMessage ?? "")}`,
          ]
        : []),
      `    lastProbeTime: "${now}"`,
      `    lastTransitionTime: "${since}"`,
    );
  }
  return `${lines.join("\n")}\n`;
}

/** The older plain-text shape of the status text. */
export function autoscalerStatusText(groups: AutoscalerGroupInput[]): string {
  const now = kubeTime();
  const condition = (type: string, status: string, detail: string, since: string) => [
    `  ${`${type}:`.padEnd(12)} ${status} (${detail})`,
    `               LastProbeTime:      ${goTime(now)}`,
    `               LastTransitionTime: ${goTime(since)}`,
  ];
  const lines = [`Cluster-autoscaler status at ${goTime(now)}:`, "Cluster-wide:"];
  lines.push(...condition("ScaleUp", "NoActivity", "ready=0 registered=0", now), "", "NodeGroups:");
  for (const group of groups) {
    const counts = `ready=${group.ready ?? 0} cloudProviderTarget=${group.target ?? 0}`;
    lines.push(
      `  Name:        ${group.name}`,
      ...condition("Health", "Healthy", counts, group.since ?? now),
      ...condition("ScaleUp", group.scaleUp, counts, group.since ?? now),
      "",
    );
  }
  return lines.join("\n");
}

/** The autoscaler's status ConfigMap with this status text. */
export function autoscalerStatusConfigMap(status: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { namespace: "kube-system", name: "cluster-autoscaler-status" },
    data: { status },
  };
}

export interface AutoscalerEventInput {
  /** `NotTriggerScaleUp`, `TriggeredScaleUp`, `ScaleDown`, `ScaleDownFailed`, ... */
  reason: string;
  involvedObject: Record<string, unknown>;
  message?: string;
  type?: "Normal" | "Warning";
}

/** An event as the cluster-autoscaler records it (input for `scenario.recordEvent`). */
export function autoscalerEvent(input: AutoscalerEventInput): EventInput {
  return {
    involvedObject: input.involvedObject,
    reason: input.reason,
    message: input.message ?? "",
    type: input.type ?? "Normal",
    source: { component: "cluster-autoscaler" },
  };
}
