/**
 * Builders of the nodes, pods and workloads the topology-drift and compute-class detector tests
 * feed in: just the fields those detectors read.
 */
type Json = Record<string, unknown>;

export const T0 = Date.parse("2026-07-01T12:00:00Z");
export const MIN = 60_000;
export const ZONE = "topology.kubernetes.io/zone";
export const CLASS = "cloud.google.com/compute-class";

export interface NodeShape {
  name: string;
  zone?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ready?: boolean;
  cordoned?: boolean;
  taints?: Array<{ key: string; effect: string }>;
}

export function node(shape: NodeShape): Json {
  return {
    metadata: {
      name: shape.name,
      uid: `node-${shape.name}`,
      labels: { ...(shape.zone ? { [ZONE]: shape.zone } : {}), ...(shape.labels ?? {}) },
      ...(shape.annotations ? { annotations: shape.annotations } : {}),
    },
    spec: { ...(shape.cordoned ? { unschedulable: true } : {}), ...(shape.taints ? { taints: shape.taints } : {}) },
    status: { conditions: [{ type: "Ready", status: shape.ready === false ? "False" : "True" }] },
  };
}

export interface PodShape {
  name: string;
  node?: string;
  namespace?: string;
  /** Deployment name (owner ReplicaSet `<deployment>-abc`), or `sts:<name>`, `ds:<name>`. */
  owner: string;
  ready?: boolean;
  unschedulable?: boolean;
  spec?: Json;
  since?: number;
}

export function pod(shape: PodShape): Json {
  const [kind, name] = shape.owner.startsWith("sts:")
    ? ["StatefulSet", shape.owner.slice(4)]
    : shape.owner.startsWith("ds:")
      ? ["DaemonSet", shape.owner.slice(3)]
      : ["ReplicaSet", `${shape.owner}-abc`];
  const scheduled = shape.node
    ? { type: "PodScheduled", status: "True" }
    : {
        type: "PodScheduled",
        status: "False",
        ...(shape.unschedulable === false ? {} : { reason: "Unschedulable" }),
        ...(shape.since !== undefined ? { lastTransitionTime: new Date(shape.since).toISOString() } : {}),
      };
  return {
    metadata: {
      name: shape.name,
      uid: `pod-${shape.name}`,
      namespace: shape.namespace ?? "shop",
      labels: { "pod-template-hash": "abc" },
      ownerReferences: [{ kind, name, uid: `${kind}-${name}`, controller: true }],
    },
    spec: { ...(shape.node ? { nodeName: shape.node } : {}), ...(shape.spec ?? {}) },
    status: {
      phase: shape.node ? "Running" : "Pending",
      conditions: [scheduled, { type: "Ready", status: shape.node && shape.ready !== false ? "True" : "False" }],
    },
  };
}

export function deployment(name: string, templateSpec: Json = {}, namespace = "shop"): Json {
  return {
    metadata: { name, namespace, uid: `deploy-${name}` },
    spec: { replicas: 3, template: { spec: templateSpec } },
  };
}

export function spreadConstraint(maxSkew: number, mode: "DoNotSchedule" | "ScheduleAnyway", key = ZONE): Json {
  return { topologySpreadConstraints: [{ maxSkew, topologyKey: key, whenUnsatisfiable: mode }] };
}
