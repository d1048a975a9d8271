/**
 * What the capacity detector tests feed in: the autoscaler's status in both shapes, pods (pending
 * or bound, with requests), nodes (domain label, allocatable) and autoscaler events; just the
 * fields the detector reads.
 */
import { iso } from "./workload-objects.ts";

type Json = Record<string, unknown>;

export interface GroupInput {
  name: string;
  scaleUp: string;
  since: number;
  ready?: number;
  target?: number;
  errorCode?: string;
  errorMessage?: string;
}

/** Go's time.String() of an epoch ms: `2026-07-01 12:00:00.123456789 +0000 UTC`. */
export function goTimeString(ms: number): string {
  const text = new Date(ms).toISOString();
  return `${text.slice(0, 10)} ${text.slice(11, 19)}.${text.slice(20, 23)}456789 +0000 UTC`;
}

/** The newer YAML status document. */
export function yamlStatus(groups: GroupInput[]): string {
  const lines = [
    `time: "${goTimeString(groups[0]?.since ?? 0)}"`,
    'autoscalerStatus: "Running"',
    "clusterWide:",
    "  health:",
    '    status: "Healthy"',
    "  scaleUp:",
    `    status: "${groups.some((group) => group.scaleUp === "InProgress") ? "InProgress" : "NoActivity"}"`,
    "nodeGroups:",
  ];
  for (const group of groups) {
    lines.push(
      `  - name: "${group.name}"`,
      "    health:",
      '      status: "Healthy"',
      "      nodeCounts:",
      "        registered:",
      `          total: ${group.ready ?? 0}`,
      `          ready: ${group.ready ?? 0}`,
      `      cloudProviderTarget: ${group.target ?? 0}`,
      "      minSize: 1",
      "      maxSize: 10",
      "    scaleUp:",
      `      status: "${group.scaleUp}"`,
    );
    if (group.errorCode)
      lines.push(
        "      backoffInfo:",
        `        errorCode: "${group.errorCode}"`,
        `        errorMessage: "${group.errorMessage ?? ""}"`,
      );
    lines.push(`      lastProbeTime: "${iso(group.since)}"`, `      lastTransitionTime: "${iso(group.since)}"`);
  }
  return `${lines.join("\n")}\n`;
}

function textCondition(type: string, status: string, detail: string, since: number): string[] {
  const pad = `${type}:`.padEnd(12);
  return [
    `  ${pad} ${status}${detail ? ` (${detail})` : ""}`,
    `               LastProbeTime:      ${goTimeString(since)}`,
    `               LastTransitionTime: ${goTimeString(since)}`,
  ];
}

/** The older plain-text status. */
export function textStatus(groups: GroupInput[], named = true): string {
  const lines = [
    `Cluster-autoscaler status at ${goTimeString(groups[0]?.since ?? 0)}:`,
    "Cluster-wide:",
    ...textCondition("Health", "Healthy", "ready=3 unready=0 notStarted=0 registered=3", 0),
    ...textCondition("ScaleUp", "NoActivity", "ready=3 registered=3", 0),
    ...textCondition("ScaleDown", "NoCandidates", "candidates=0", 0),
    "",
    "NodeGroups:",
  ];
  for (const group of groups) {
    const counts = `ready=${group.ready ?? 0} cloudProviderTarget=${group.target ?? 0}`;
    if (named) lines.push(`  Name:        ${group.name}`);
    lines.push(
      ...textCondition("Health", "Healthy", `${counts} (minSize=1, maxSize=10)`, group.since),
      ...textCondition("ScaleUp", group.scaleUp, counts, group.since),
      ...textCondition("ScaleDown", "NoCandidates", "candidates=0", group.since),
      "",
    );
  }
  return lines.join("\n");
}

export function configMap(status: string): Json {
  return { metadata: { name: "cluster-autoscaler-status", namespace: "kube-system" }, data: { status } };
}

export interface PodInput {
  uid: string;
  name?: string;
  node?: string;
  phase?: string;
  cpu?: string;
  memory?: string;
  unschedulableSince?: number;
  created?: number;
}

export function pod(input: PodInput): Json {
  const pending = input.unschedulableSince !== undefined;
  return {
    metadata: {
      uid: input.uid,
      name: input.name ?? input.uid,
      namespace: "shop",
      ...(input.created !== undefined ? { creationTimestamp: iso(input.created) } : {}),
      ownerReferences: [{ kind: "ReplicaSet", name: "web-1", uid: "rs-1", controller: true }],
    },
    spec: {
      ...(input.node ? { nodeName: input.node } : {}),
      containers: [{ name: "app", resources: { requests: { cpu: input.cpu ?? "0", memory: input.memory ?? "0" } } }],
    },
    status: {
      phase: input.phase ?? (input.node ? "Running" : "Pending"),
      conditions: pending
        ? [
            {
              type: "PodScheduled",
              status: "False",
              reason: "Unschedulable",
              message: "0/3 nodes are available: 3 Insufficient cpu.",
              lastTransitionTime: iso(input.unschedulableSince ?? 0),
            },
          ]
        : [{ type: "PodScheduled", status: "True" }],
    },
  };
}

export function node(name: string, pool: string, cpu: string, memory: string, cordoned = false): Json {
  return {
    metadata: { uid: `node-${name}`, name, labels: { "cloud.google.com/gke-nodepool": pool } },
    spec: cordoned ? { unschedulable: true } : {},
    status: { allocatable: { cpu, memory, pods: "110" } },
  };
}

export function autoscalerEvent(reason: string, involved: Json, message = "", type = "Normal"): Json {
  return {
    metadata: { name: `e-${reason}`, namespace: String(involved.namespace ?? "default") },
    involvedObject: involved,
    reason,
    message,
    type,
    source: { component: "cluster-autoscaler" },
  };
}
