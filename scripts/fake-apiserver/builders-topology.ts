/**
 * Builders for what spar's own topology-drift and compute-class sources read: nodes in a zone
 * (and region, node pool, compute class with its rank annotation; Ready, cordoned), Deployments
 * whose pod template declares spread constraints or a compute class, the pods of such a
 * Deployment (owned by its ReplicaSet `<name>-<hash>`, placed on a node or Pending and
 * Unschedulable) and `cloud.google.com/v1` ComputeClasses with their priorities. Pure functions
 * returning plain objects; the scenario stores them (`scenario.apply(zonedNode(...))`).
 */
import type { KubeObject } from "./selectors.ts";
import { kubeTime } from "./store.ts";

const ZONE = "topology.kubernetes.io/zone";
const REGION = "topology.kubernetes.io/region";
const CLASS = "cloud.google.com/compute-class";
const RANK = "compute-class.spar.dev/rank";
const HASH = "5d8f7c9b6";

export interface ZonedNodeInput {
  name: string;
  zone: string;
  region?: string;
  ready?: boolean;
  unschedulable?: boolean;
  nodePool?: string;
  computeClass?: string;
  /** The rank annotation (compute-class.spar.dev/rank). */
  rank?: number;
  labels?: Record<string, string>;
}

export function zonedNode(input: ZonedNodeInput): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: input.name,
      labels: {
        "kubernetes.io/hostname": input.name,
        [ZONE]: input.zone,
        [REGION]: input.region ?? "region-1",
        ...(input.nodePool ? { "cloud.google.com/gke-nodepool": input.nodePool } : {}),
        ...(input.computeClass ? { [CLASS]: input.computeClass } : {}),
        ...(input.labels ?? {}),
      },
      ...(input.rank !== undefined ? { annotations: { [RANK]: String(input.rank) } } : {}),
    },
    spec: input.unschedulable ? { unschedulable: true } : {},
    status: {
      conditions: [{ type: "Ready", status: input.ready === false ? "False" : "True", lastTransitionTime: kubeTime() }],
      nodeInfo: { kubeletVersion: "v1.32.0" },
    },
  };
}

export interface SpreadConstraintInput {
  maxSkew: number;
  topologyKey?: string;
  whenUnsatisfiable?: "DoNotSchedule" | "ScheduleAnyway";
}

export interface SpreadDeploymentInput {
  namespace?: string;
  name: string;
  replicas?: number;
  constraints?: SpreadConstraintInput[];
  computeClass?: string;
}

function templateSpec(input: { name: string; constraints?: SpreadConstraintInput[]; computeClass?: string }) {
  return {
    ...(input.constraints
      ? {
          topologySpreadConstraints: input.constraints.map((constraint) => ({
            maxSkew: constraint.maxSkew,
            topologyKey: constraint.topologyKey ?? ZONE,
            whenUnsatisfiable: constraint.whenUnsatisfiable ?? "DoNotSchedule",
            labelSelector: { matchLabels: { app: input.name } },
          })),
        }
      : {}),
    ...(input.computeClass ? { nodeSelector: { [CLASS]: input.computeClass } } : {}),
    containers: [{ name: "app", image: `registry.example.com/${input.name}:v1` }],
  };
}

export function spreadDeployment(input: SpreadDeploymentInput): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: input.name, namespace: input.namespace ?? "default", labels: { app: input.name } },
    spec: {
      replicas: input.replicas ?? 3,
      selector: { matchLabels: { app: input.name } },
      template: { metadata: { labels: { app: input.name } }, spec: templateSpec(input) },
    },
  };
}

export interface SpreadPodInput {
  namespace?: string;
  /** The Deployment the pod belongs to (its ReplicaSet is `<deployment>-<hash>`). */
  deployment: string;
  name: string;
  /** Placed on this node (Running, Ready); absent: Pending and Unschedulable. */
  node?: string;
  constraints?: SpreadConstraintInput[];
  computeClass?: string;
}

export function spreadPod(input: SpreadPodInput): KubeObject {
  const placed = input.node !== undefined;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: input.name,
      namespace: input.namespace ?? "default",
      labels: { app: input.deployment, "pod-template-hash": HASH },
      ownerReferences: [
        {
          apiVersion: "apps/v1",
          kind: "ReplicaSet",
          name: `${input.deployment}-${HASH}`,
          uid: `rs-${input.deployment}`,
          controller: true,
        },
      ],
    },
    spec: { ...templateSpec({ ...input, name: input.deployment }), ...(placed ? { nodeName: input.node } : {}) },
    status: {
      phase: placed ? "Running" : "Pending",
      conditions: placed
        ? [
            { type: "PodScheduled", status: "True" },
            { type: "Ready", status: "True" },
          ]
        : [
            {
              type: "PodScheduled",
              status: "False",
              reason: "Unschedulable",
              message: "0/3 nodes are available",
              lastTransitionTime: kubeTime(),
            },
          ],
    },
  };
}

export interface ComputeClassInput {
  name: string;
  /** In rank order: `{machineFamily, machineType, spot, nodepools}`. */
  priorities: Array<Record<string, unknown>>;
}

export function computeClass(input: ComputeClassInput): KubeObject {
  return {
    apiVersion: "cloud.google.com/v1",
    kind: "ComputeClass",
    metadata: { name: input.name },
    spec: { priorities: input.priorities, nodePoolAutoCreation: { enabled: true } },
  };
}
