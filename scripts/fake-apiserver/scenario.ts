/**
 * The in-process scenario API: what a test does to the fake cluster. Create, apply, patch and
 * delete any served object (pods, nodes, events in both APIs, replicasets, deployments,
 * namespaces, …), record events the way the kubelet does (a repeat bumps `count` and
 * `lastTimestamp` and arrives as MODIFIED), set pod logs, change the grant set and send
 * bookmarks. Namespaces are created on first use. Methods throw on a refused change so a test
 * fails loudly; every returned object is a copy.
 */
import type { AccessControl, Grant } from "./access.ts";
import {
  type EventInput,
  type EventV1Input,
  type NodeInput,
  type PodInput,
  type WorkloadInput,
  deployment,
  event,
  eventV1,
  namespace,
  node,
  pod,
  replicaSet,
} from "./builders.ts";
import { fromEventsV1, toEventsV1 } from "./events-v1.ts";
import type { ContainerLogs, PodLogs } from "./logs.ts";
import { type ResourceInfo, resourceForKind } from "./resources.ts";
import type { KubeObject } from "./selectors.ts";
import type { ServedApis } from "./served-apis.ts";
import { type ObjectStore, kubeTime } from "./store.ts";
import type { WatchHub } from "./watch.ts";
import {
  type EndpointSliceInput,
  type PodDisruptionBudgetInput,
  endpointSlice,
  podDisruptionBudget,
} from "./builders-objectstate.ts";
import { type ResourceQuotaInput, resourceQuota } from "./builders-quota.ts";
import { type ContainerUsageInput, type VolumeUsageInput, podMetrics } from "./builders-metrics.ts";
import type { NodeStats } from "./node-stats.ts";
import {
  type AutoscalerEventInput,
  type CapacityNodeInput,
  type CapacityPodInput,
  autoscalerEvent,
  autoscalerStatusConfigMap,
  capacityNode,
  capacityPod,
} from "./builders-capacity.ts";

/** Identifies one object: apiVersion and kind as in manifests. */
export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
}

export interface ScenarioParts {
  store: ObjectStore;
  logs: PodLogs;
  watches: WatchHub;
  access: AccessControl;
  served?: ServedApis;
  stats?: NodeStats;
}

function resourceOf(apiVersion: unknown, kind: unknown): ResourceInfo {
  const info = resourceForKind(String(apiVersion ?? ""), String(kind ?? ""));
  if (!info)
    throw new Error(`fake apiserver: no served resource has apiVersion ${String(apiVersion)} and kind ${String(kind)}`);
  return info;
}

function metadataOf(object: KubeObject): Record<string, unknown> {
  return (object.metadata ?? {}) as Record<string, unknown>;
}

/** An events.k8s.io/v1 object is stored in core form; everything else as given. */
function toStored(object: KubeObject): [ResourceInfo, KubeObject] {
  const info = resourceOf(object.apiVersion, object.kind);
  return info.group === "events.k8s.io" ? [resourceOf("v1", "Event"), fromEventsV1(object)] : [info, object];
}

export class Scenario {
  constructor(private readonly parts: ScenarioParts) {}

  /** The store's current resourceVersion. */
  get resourceVersion(): number {
    return this.parts.store.resourceVersion;
  }

  /** Create an object (apiVersion and kind required); throws if it exists. */
  create(object: KubeObject): KubeObject {
    const [info, stored] = toStored(object);
    this.ensureNamespace(info, stored);
    const result = this.parts.store.create(info.storage, {
      ...stored,
      kind: info.kind,
      apiVersion: info.group === "" ? info.version : `${info.group}/${info.version}`,
    });
    if (!result.ok) throw new Error(`fake apiserver: create refused (${result.code}): ${result.message}`);
    return this.present(object, result.object);
  }

  /** Replace an existing object, last writer wins (its resourceVersion is ignored). */
  update(object: KubeObject): KubeObject {
    const [info, stored] = toStored(object);
    const metadata = { ...metadataOf(stored) };
    delete metadata.resourceVersion;
    const result = this.parts.store.update(info.storage, { ...stored, metadata });
    if (!result.ok) throw new Error(`fake apiserver: update refused (${result.code}): ${result.message}`);
    return this.present(object, result.object);
  }

  /** Create the object, or replace it when it exists. */
  apply(object: KubeObject): KubeObject {
    const [info, stored] = toStored(object);
    const metadata = metadataOf(stored);
    return this.parts.store.get(info.storage, String(metadata.namespace ?? ""), String(metadata.name ?? ""))
      ? this.update(object)
      : this.create(object);
  }

  /** Deep-merge `patch` into a stored object (JSON merge patch: null deletes a key). */
  patch(ref: ObjectRef, patch: Record<string, unknown>): KubeObject {
    const current = this.get(ref);
    if (!current) throw new Error(`fake apiserver: patch of missing ${ref.kind} ${ref.namespace ?? ""}/${ref.name}`);
    return this.update(mergeObjects(current, patch));
  }

  delete(ref: ObjectRef): KubeObject {
    const info = resourceOf(ref.apiVersion, ref.kind);
    const result = this.parts.store.delete(info.storage, ref.namespace ?? "", ref.name);
    if (!result.ok) throw new Error(`fake apiserver: delete refused (${result.code}): ${result.message}`);
    return this.present(ref as unknown as KubeObject, result.object);
  }

  get(ref: ObjectRef): KubeObject | undefined {
    const info = resourceOf(ref.apiVersion, ref.kind);
    const object = this.parts.store.get(info.storage, ref.namespace ?? "", ref.name);
    return object ? this.present(ref as unknown as KubeObject, object) : undefined;
  }

  list(apiVersion: string, kind: string, inNamespace?: string): KubeObject[] {
    const info = resourceOf(apiVersion, kind);
    return this.parts.store.list(info.storage, inNamespace).map((object) => this.present({ apiVersion, kind }, object));
  }

  createPod(input: PodInput): KubeObject {
    return this.create(pod(input));
  }

  /** Replace a pod's state with a freshly built one (keeps uid and creation time). */
  updatePod(input: PodInput): KubeObject {
    return this.update(pod(input));
  }

  createNode(input: NodeInput): KubeObject {
    return this.create(node(input));
  }

  updateNode(input: NodeInput): KubeObject {
    return this.update(node(input));
  }

  createReplicaSet(input: WorkloadInput): KubeObject {
    return this.create(replicaSet(input));
  }

  createDeployment(input: WorkloadInput & { progressDeadlineExceeded?: boolean }): KubeObject {
    return this.create(deployment(input));
  }

  createNamespace(name: string, labels?: Record<string, string>): KubeObject {
    return this.create(namespace(name, labels));
  }

  /**
   * Record a core/v1 event as the kubelet's recorder does: an existing event with the same
   * involved object, reason and message is bumped (count+1, new lastTimestamp: a MODIFIED on the
   * wire) unless `distinct` is set; otherwise a new event is created (ADDED).
   */
  recordEvent(input: EventInput & { distinct?: boolean }): KubeObject {
    const fresh = event(input);
    if (!input.distinct && input.name === undefined) {
      const involved = fresh.involvedObject as Record<string, unknown>;
      const existing = this.parts.store.list("events", String(metadataOf(fresh).namespace)).find((candidate) => {
        const other = candidate.involvedObject as Record<string, unknown>;
        return (
          other.uid === involved.uid &&
          other.name === involved.name &&
          candidate.reason === fresh.reason &&
          candidate.message === fresh.message
        );
      });
      if (existing) {
        const count = typeof existing.count === "number" ? existing.count : 1;
        return this.update({
          ...existing,
          count: input.count ?? count + 1,
          lastTimestamp: input.lastTimestamp ?? kubeTime(),
        });
      }
    }
    return this.create(fresh);
  }

  /**
   * Create a new-style event through the events.k8s.io/v1 representation (eventTime, optional
   * series, no deprecated count); stored as core/v1 and visible in both APIs.
   */
  createEventV1(input: EventV1Input): KubeObject {
    return this.create(eventV1(input));
  }

  setPodLogs(namespaceName: string, podName: string, container: string, logs: ContainerLogs): void {
    this.parts.logs.set(namespaceName, podName, container, logs);
  }

  appendPodLogs(namespaceName: string, podName: string, container: string, text: string): void {
    this.parts.logs.append(namespaceName, podName, container, text);
  }

  /** Replace the grant set (undefined allows everything); SSAR answers and request checks follow at once. */
  setGrants(grants: Grant[] | undefined): void {
    this.parts.access.setGrants(grants);
  }

  /** Serve a group/version again, or take it away (`gateway.networking.k8s.io/v1`: the CRD uninstalled; objects kept). */
  setApiServed(groupVersion: string, served: boolean): void {
    this.parts.served?.set(groupVersion, served);
  }

  /** Send a BOOKMARK at the current resourceVersion to every watch that allows bookmarks; returns how many. */
  bookmark(): number {
    return this.parts.watches.bookmarkAll();
  }

  /** Create or replace a Service's EndpointSlice (object-state, degradation). */
  applyEndpointSlice(input: EndpointSliceInput): KubeObject {
    return this.apply(endpointSlice(input));
  }

  /** Create or replace a PodDisruptionBudget with its status (object-state). */
  applyPodDisruptionBudget(input: PodDisruptionBudgetInput): KubeObject {
    return this.apply(podDisruptionBudget(input));
  }

  /** Create or replace a ResourceQuota with its hard limits and usage (quota). */
  applyResourceQuota(input: ResourceQuotaInput): KubeObject {
    return this.apply(resourceQuota(input));
  }

  /** Set one container's usage in its pod's PodMetrics (metrics.k8s.io), stamped `timestamp` (default now). */
  setContainerUsage(input: ContainerUsageInput): KubeObject {
    if (typeof input.pod !== "string" || typeof input.container !== "string")
      throw new Error("fake apiserver: container usage needs pod and container (strings)");
    const ref = { apiVersion: "metrics.k8s.io/v1beta1", kind: "PodMetrics", name: input.pod };
    const existing = this.get({ ...ref, namespace: input.namespace ?? "default" });
    return this.apply(podMetrics(input, existing));
  }

  /** Set a PVC's usage in its node's kubelet stats summary (served through `nodes/<node>/proxy`). */
  setVolumeUsage(input: VolumeUsageInput): void {
    if (typeof input.node !== "string" || typeof input.claim !== "string")
      throw new Error("fake apiserver: volume usage needs node and claim (strings)");
    if (typeof input.usedBytes !== "number" || typeof input.capacityBytes !== "number")
      throw new Error("fake apiserver: volume usage needs usedBytes and capacityBytes (numbers)");
    this.parts.stats?.set(input);
  }

  /** A PVC no longer mounted on the node: gone from its stats summary. */
  removeVolumeUsage(node: string, namespace: string, claim: string): void {
    this.parts.stats?.remove(node, namespace, claim);
  }

  /** Create or replace a node of a node group with allocatable CPU and memory (capacity). */
  applyCapacityNode(input: CapacityNodeInput): KubeObject {
    return this.apply(capacityNode(input));
  }

  /** Create or replace a pod with resource requests, bound or Pending and Unschedulable (capacity). */
  applyCapacityPod(input: CapacityPodInput): KubeObject {
    return this.apply(capacityPod(input));
  }

  /** Create or replace `kube-system/cluster-autoscaler-status` with this status text (capacity). */
  setAutoscalerStatus(status: string): KubeObject {
    return this.apply(autoscalerStatusConfigMap(status));
  }

  /** Record an event as the cluster-autoscaler does: source component `cluster-autoscaler` (capacity). */
  recordAutoscalerEvent(input: AutoscalerEventInput): KubeObject {
    return this.recordEvent(autoscalerEvent(input));
  }

  private ensureNamespace(info: ResourceInfo, object: KubeObject): void {
    const name = metadataOf(object).namespace;
    if (!info.namespaced || typeof name !== "string" || name === "") return;
    if (!this.parts.store.get("namespaces", "", name)) this.parts.store.create("namespaces", namespace(name));
  }

  /** A copy of a stored object in the representation the caller used (events.k8s.io or core). */
  private present(asked: KubeObject, stored: KubeObject): KubeObject {
    const copy = structuredClone(stored);
    return asked.apiVersion === "events.k8s.io/v1" ? toEventsV1(copy) : copy;
  }
}

function mergeObjects(target: KubeObject, patch: Record<string, unknown>): KubeObject {
  const result: Record<string, unknown> = { ...target };
  for (const [key, value] of Object.entries(patch)) {
    const existing = result[key];
    if (value === null) delete result[key];
    else if (
      typeof value === "object" &&
      !Array.isArray(value) &&
      typeof existing === "object" &&
      existing !== null &&
      !Array.isArray(existing)
    ) {
      result[key] = mergeObjects(existing as KubeObject, value as Record<string, unknown>);
    } else result[key] = value;
  }
  return result as KubeObject;
}
