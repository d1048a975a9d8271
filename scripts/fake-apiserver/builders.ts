/**
 * Builders of realistic objects for scenarios: pods (waiting reasons such as CrashLoopBackOff,
 * last terminations such as OOMKilled, owner ReplicaSets, node binding), nodes (Ready and pressure
 * conditions), ReplicaSets and Deployments (owner chains, ProgressDeadlineExceeded), namespaces
 * and core/v1 Events. Pure functions returning plain objects; the scenario stores them.
 */
import type { KubeObject } from "./selectors.ts";
import { kubeTime } from "./store.ts";

export interface OwnerInput {
  kind: string;
  name: string;
  uid: string;
  apiVersion?: string;
}

export interface ContainerInput {
  name: string;
  image?: string;
  /** state.waiting.reason, e.g. CrashLoopBackOff, ImagePullBackOff, ErrImagePull. */
  waitingReason?: string;
  waitingMessage?: string;
  /** lastState.terminated.reason, e.g. OOMKilled, Error. */
  lastTerminationReason?: string;
  lastExitCode?: number;
  restartCount?: number;
  ready?: boolean;
}

export interface PodInput {
  namespace?: string;
  name: string;
  /** A fixed metadata.uid (else the store makes one up), for a script that must name the pod's uid. */
  uid?: string;
  node?: string;
  phase?: "Pending" | "Running" | "Succeeded" | "Failed" | "Unknown";
  labels?: Record<string, string>;
  containers?: ContainerInput[];
  owner?: OwnerInput;
  /** Extra status.conditions, e.g. `{type: "PodScheduled", status: "False", reason: "Unschedulable"}`. */
  conditions?: Record<string, unknown>[];
}

function ownerReference(owner: OwnerInput): Record<string, unknown> {
  return {
    apiVersion: owner.apiVersion ?? "apps/v1",
    kind: owner.kind,
    name: owner.name,
    uid: owner.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

function containerStatus(container: ContainerInput): Record<string, unknown> {
  const waiting = container.waitingReason !== undefined;
  const state = waiting
    ? {
        waiting: {
          reason: container.waitingReason,
          ...(container.waitingMessage ? { message: container.waitingMessage } : {}),
        },
      }
    : { running: { startedAt: kubeTime() } };
  const lastState = container.lastTerminationReason
    ? {
        terminated: {
          reason: container.lastTerminationReason,
          exitCode: container.lastExitCode ?? 137,
          startedAt: kubeTime(),
          finishedAt: kubeTime(),
        },
      }
    : {};
  return {
    name: container.name,
    image: container.image ?? `registry.example.com/${container.name}:v1`,
    imageID: "",
    ready: container.ready ?? !waiting,
    started: !waiting,
    restartCount: container.restartCount ?? 0,
    state,
    lastState,
  };
}

export function pod(input: PodInput): KubeObject {
  const containers = input.containers ?? [{ name: "app" }];
  const ready = containers.every((container) => container.ready ?? container.waitingReason === undefined);
  const conditions = [
    { type: "PodScheduled", status: input.node ? "True" : "False" },
    { type: "Ready", status: ready ? "True" : "False" },
    ...(input.conditions ?? []),
  ];
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: input.name,
      namespace: input.namespace ?? "default",
      ...(input.uid ? { uid: input.uid } : {}),
      labels: input.labels ?? { app: input.name },
      ...(input.owner ? { ownerReferences: [ownerReference(input.owner)] } : {}),
    },
    spec: {
      ...(input.node ? { nodeName: input.node } : {}),
      restartPolicy: "Always",
      schedulerName: "default-scheduler",
      serviceAccountName: "default",
      containers: containers.map((container) => ({
        name: container.name,
        image: container.image ?? `registry.example.com/${container.name}:v1`,
      })),
    },
    status: {
      phase: input.phase ?? (input.node ? "Running" : "Pending"),
      conditions,
      ...(input.node ? { hostIP: "10.0.0.1", podIP: "10.1.0.1" } : {}),
      containerStatuses: containers.map(containerStatus),
    },
  };
}

export interface NodeInput {
  name: string;
  ready?: "True" | "False" | "Unknown";
  labels?: Record<string, string>;
  /** Pressure conditions set to True, e.g. ["MemoryPressure"]. */
  pressure?: ("MemoryPressure" | "DiskPressure" | "PIDPressure")[];
  unschedulable?: boolean;
}

export function node(input: NodeInput): KubeObject {
  const pressures = ["MemoryPressure", "DiskPressure", "PIDPressure"].map((type) => ({
    type,
    status: input.pressure?.includes(type as "MemoryPressure") ? "True" : "False",
    lastTransitionTime: kubeTime(),
  }));
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: input.name, labels: { "kubernetes.io/hostname": input.name, ...(input.labels ?? {}) } },
    spec: input.unschedulable ? { unschedulable: true } : {},
    status: {
      conditions: [...pressures, { type: "Ready", status: input.ready ?? "True", lastTransitionTime: kubeTime() }],
      nodeInfo: { kubeletVersion: "v1.32.0" },
    },
  };
}

export interface WorkloadInput {
  namespace?: string;
  name: string;
  replicas?: number;
  readyReplicas?: number;
  labels?: Record<string, string>;
  owner?: OwnerInput;
}

export function replicaSet(input: WorkloadInput): KubeObject {
  const replicas = input.replicas ?? 1;
  return {
    apiVersion: "apps/v1",
    kind: "ReplicaSet",
    metadata: {
      name: input.name,
      namespace: input.namespace ?? "default",
      labels: input.labels ?? { app: input.name },
      ...(input.owner ? { ownerReferences: [ownerReference(input.owner)] } : {}),
    },
    spec: { replicas, selector: { matchLabels: input.labels ?? { app: input.name } } },
    status: {
      replicas,
      readyReplicas: input.readyReplicas ?? replicas,
      availableReplicas: input.readyReplicas ?? replicas,
    },
  };
}

export function deployment(input: WorkloadInput & { progressDeadlineExceeded?: boolean }): KubeObject {
  const replicas = input.replicas ?? 1;
  const progressing = input.progressDeadlineExceeded
    ? {
        type: "Progressing",
        status: "False",
        reason: "ProgressDeadlineExceeded",
        message: `ReplicaSet "${input.name}" has timed out progressing.`,
      }
    : { type: "Progressing", status: "True", reason: "NewReplicaSetAvailable" };
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: {
      name: input.name,
      namespace: input.namespace ?? "default",
      labels: input.labels ?? { app: input.name },
      generation: 1,
    },
    spec: { replicas, progressDeadlineSeconds: 600, selector: { matchLabels: input.labels ?? { app: input.name } } },
    status: {
      observedGeneration: 1,
      replicas,
      readyReplicas: input.readyReplicas ?? replicas,
      conditions: [progressing],
    },
  };
}

export function namespace(name: string, labels: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name, labels: { "kubernetes.io/metadata.name": name, ...labels } },
    spec: {},
    status: { phase: "Active" },
  };
}

/** An ObjectReference to a stored object (what events carry as involvedObject / regarding). */
export function objectReference(object: KubeObject, fieldPath?: string): Record<string, unknown> {
  const metadata = (object.metadata ?? {}) as Record<string, unknown>;
  return {
    kind: object.kind,
    apiVersion: object.apiVersion,
    ...(metadata.namespace ? { namespace: metadata.namespace } : {}),
    name: metadata.name,
    uid: metadata.uid,
    resourceVersion: metadata.resourceVersion,
    ...(fieldPath ? { fieldPath } : {}),
  };
}

export interface EventInput {
  /** The involved object (a stored object, or a reference with kind, name, namespace, uid). */
  involvedObject: Record<string, unknown>;
  reason: string;
  message?: string;
  type?: "Normal" | "Warning";
  count?: number;
  /** Event name; default `<object name>.<random hex>` as the kubelet does. */
  name?: string;
  namespace?: string;
  source?: { component?: string; host?: string };
  firstTimestamp?: string;
  lastTimestamp?: string;
  labels?: Record<string, string>;
  fieldPath?: string;
}

export function event(input: EventInput): KubeObject {
  const involved =
    "metadata" in input.involvedObject
      ? objectReference(input.involvedObject as KubeObject, input.fieldPath)
      : { ...input.involvedObject };
  if (input.fieldPath) involved.fieldPath = input.fieldPath;
  const objectName = String(involved.name ?? "object");
  const now = kubeTime();
  return {
    apiVersion: "v1",
    kind: "Event",
    metadata: {
      name: input.name ?? `${objectName}.${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`,
      namespace: input.namespace ?? String(involved.namespace ?? "default"),
      ...(input.labels ? { labels: input.labels } : {}),
    },
    involvedObject: involved,
    reason: input.reason,
    message: input.message ?? "",
    source: input.source ?? { component: "kubelet" },
    firstTimestamp: input.firstTimestamp ?? now,
    lastTimestamp: input.lastTimestamp ?? now,
    count: input.count ?? 1,
    type: input.type ?? "Warning",
    eventTime: null,
    reportingComponent: input.source?.component ?? "kubelet",
    reportingInstance: input.source?.host ?? "",
  };
}

/** MicroTime as the apiserver writes it: RFC 3339 with microseconds. */
export function microTime(date: Date = new Date()): string {
  return `${date.toISOString().slice(0, 23)}000Z`;
}

export interface EventV1Input extends EventInput {
  action?: string;
  /** `series` of a repeating event: count and lastObservedTime. */
  series?: { count: number; lastObservedTime?: string };
  eventTime?: string;
}

/**
 * A new-style events.k8s.io/v1 Event (eventTime, reportingController/Instance, optional series;
 * no deprecated count or timestamps), as current controllers and the kubelet's new recorder emit.
 */
export function eventV1(input: EventV1Input): KubeObject {
  const core = event(input);
  const eventTime = input.eventTime ?? microTime();
  return {
    apiVersion: "events.k8s.io/v1",
    kind: "Event",
    metadata: core.metadata ?? {},
    eventTime,
    ...(input.series
      ? { series: { count: input.series.count, lastObservedTime: input.series.lastObservedTime ?? eventTime } }
      : {}),
    reportingController: input.source?.component ?? "kubelet",
    reportingInstance: input.source?.host ?? "",
    action: input.action ?? input.reason,
    reason: input.reason,
    regarding: core.involvedObject,
    note: input.message ?? "",
    type: input.type ?? "Warning",
  };
}
