/**
 * Builders for what the saturation source reads: metrics.k8s.io/v1beta1 PodMetrics (a pod's
 * containers' CPU and memory usage at a scrape `timestamp`, as metrics-server serves them) and
 * the kubelet's stats summary of a node (`/api/v1/nodes/<node>/proxy/stats/summary`) with the
 * PVC volumes the scenario set. Pure functions returning plain objects.
 */
import type { KubeObject } from "./selectors.ts";

export interface ContainerUsageInput {
  namespace?: string;
  pod: string;
  container: string;
  /** A quantity: `250m`, `123456789n`. */
  cpu?: string;
  /** A quantity: `900Mi`. */
  memory?: string;
  /** The scrape time (RFC 3339); default now. */
  timestamp?: string;
}

/** The PodMetrics with this container's usage set (others of `existing` kept). */
export function podMetrics(input: ContainerUsageInput, existing?: KubeObject): KubeObject {
  const containers = ((existing?.containers ?? []) as { name: string; usage: Record<string, string> }[]).filter(
    (container) => container.name !== input.container,
  );
  const before = ((existing?.containers ?? []) as { name: string; usage: Record<string, string> }[]).find(
    (container) => container.name === input.container,
  );
  const usage = {
    cpu: input.cpu ?? before?.usage.cpu ?? "0",
    memory: input.memory ?? before?.usage.memory ?? "0",
  };
  return {
    apiVersion: "metrics.k8s.io/v1beta1",
    kind: "PodMetrics",
    metadata: { name: input.pod, namespace: input.namespace ?? "default" },
    timestamp: input.timestamp ?? new Date().toISOString(),
    window: "30s",
    containers: [...containers, { name: input.container, usage }].sort((a, b) => a.name.localeCompare(b.name)),
  };
}

export interface VolumeUsageInput {
  node: string;
  namespace?: string;
  claim: string;
  usedBytes: number;
  capacityBytes: number;
  /** The pod mounting it; default `<claim>-user`. */
  pod?: string;
  /** The volume's name in the pod; default the claim's. */
  volume?: string;
  /** When the kubelet measured it (RFC 3339); default now. */
  time?: string;
}

/** A node's stats summary: one entry per pod with its PVC volumes (`podUid` looks a stored pod's UID up). */
export function statsSummary(
  node: string,
  volumes: readonly VolumeUsageInput[],
  podUid: (namespace: string, pod: string) => string,
): Record<string, unknown> {
  const pods = new Map<string, VolumeUsageInput[]>();
  for (const volume of volumes) {
    const key = `${volume.namespace ?? "default"}/${volume.pod ?? `${volume.claim}-user`}`;
    pods.set(key, [...(pods.get(key) ?? []), volume]);
  }
  return {
    node: { nodeName: node, systemContainers: [] },
    pods: [...pods].map(([key, mounted]) => {
      const [namespace = "default", name = ""] = key.split("/");
      return {
        podRef: { name, namespace, uid: podUid(namespace, name) },
        containers: [],
        volume: mounted.map((volume) => ({
          time: volume.time ?? new Date().toISOString(),
          availableBytes: Math.max(0, volume.capacityBytes - volume.usedBytes),
          capacityBytes: volume.capacityBytes,
          usedBytes: volume.usedBytes,
          name: volume.volume ?? volume.claim,
          pvcRef: { name: volume.claim, namespace },
        })),
      };
    }),
  };
}
