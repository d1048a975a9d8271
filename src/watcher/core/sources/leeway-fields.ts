/**
 * What spar's own leeway sources (topology-drift, compute-class; D21, D406) read from nodes and
 * pods: whether a node is usable (D407), a pod's scheduling state, the workload a pod belongs to,
 * and whether a node satisfies a pod's node selector and required node affinity. Pure.
 */
import type { KubeObject } from "../source-spec.ts";

export type { SeriesFamily } from "../source-spec.ts";
import { condition, controller, field, label, meta, text } from "./source-fields.ts";

export function labels(object: KubeObject): Record<string, string> {
  const found = field(object, "metadata", "labels");
  if (found === null || typeof found !== "object") return {};
  return Object.fromEntries(
    Object.entries(found as Record<string, unknown>).filter(
      (entry): entry is [string, string] => typeof entry[1] === "string",
    ),
  );
}

/** Node-lifecycle taints the control plane sets on a node it will not schedule onto. */
const LIFECYCLE_TAINT = /^node\.(kubernetes\.io|cloudprovider\.kubernetes\.io)\//;

/**
 * D407: a node is usable when Ready is True, it is not cordoned, and it carries no NoSchedule or
 * NoExecute taint of the node lifecycle (`node.kubernetes.io/*`: not-ready, unreachable,
 * unschedulable, out-of-service...). A workload's own taints (dedicated=gpu) do not count.
 */
export function nodeUsable(node: KubeObject): boolean {
  if (condition(node, "Ready")?.status !== "True") return false;
  if (field(node, "spec", "unschedulable") === true) return false;
  const taints = field(node, "spec", "taints");
  if (!Array.isArray(taints)) return true;
  return !taints.some((taint) => {
    const effect = text(field(taint, "effect"));
    return (effect === "NoSchedule" || effect === "NoExecute") && LIFECYCLE_TAINT.test(text(field(taint, "key")));
  });
}

/** The four scheduling states of a pod that counts (D409); terminated and terminating pods do not count. */
export type PodState = "running" | "starting" | "pending" | "unschedulable";

export function podState(pod: KubeObject): PodState | undefined {
  const phase = text(field(pod, "status", "phase"));
  if (phase === "Succeeded" || phase === "Failed") return undefined;
  if (field(pod, "metadata", "deletionTimestamp") !== undefined) return undefined;
  if (text(field(pod, "spec", "nodeName")) === "") {
    const scheduled = condition(pod, "PodScheduled");
    return scheduled?.status === "False" && scheduled.reason === "Unschedulable" ? "unschedulable" : "pending";
  }
  return condition(pod, "Ready")?.status === "True" ? "running" : "starting";
}

export interface Workload {
  kind: "Deployment" | "StatefulSet" | "ReplicaSet";
  namespace: string;
  name: string;
}

export function workloadKey(workload: Workload): string {
  return `${workload.namespace}/${workload.kind}/${workload.name}`;
}

/**
 * The workload a pod belongs to: its StatefulSet, or the Deployment of its ReplicaSet (a
 * ReplicaSet named `<deployment>-<pod-template-hash>`), or a bare ReplicaSet. DaemonSet, Job and
 * bare pods are no workload here (they have no spread to drift from).
 */
export function podWorkload(pod: KubeObject): Workload | undefined {
  const owner = controller(pod);
  const { namespace } = meta(pod);
  if (!owner) return undefined;
  if (owner.kind === "StatefulSet") return { kind: "StatefulSet", namespace, name: owner.name };
  if (owner.kind !== "ReplicaSet") return undefined;
  const hash = label(pod, "pod-template-hash");
  if (hash && owner.name.endsWith(`-${hash}`))
    return { kind: "Deployment", namespace, name: owner.name.slice(0, -hash.length - 1) };
  return { kind: "ReplicaSet", namespace, name: owner.name };
}

interface Requirement {
  key: string;
  operator: string;
  values: string[];
}

function requirementHolds(requirement: Requirement, nodeLabels: Record<string, string>): boolean {
  const value = nodeLabels[requirement.key];
  switch (requirement.operator) {
    case "In":
      return value !== undefined && requirement.values.includes(value);
    case "NotIn":
      return value === undefined || !requirement.values.includes(value);
    case "Exists":
      return value !== undefined;
    case "DoesNotExist":
      return value === undefined;
    default:
      // Gt, Lt and unknown operators are not judged: the node is taken as matching.
      return true;
  }
}

function requirements(term: unknown): Requirement[] {
  const expressions = field(term, "matchExpressions");
  if (!Array.isArray(expressions)) return [];
  return expressions.map((expression) => ({
    key: text(field(expression, "key")),
    operator: text(field(expression, "operator")),
    values: (Array.isArray(field(expression, "values")) ? (field(expression, "values") as unknown[]) : []).map(text),
  }));
}

/** The nodeSelector and required node affinity of a pod (or its template), as one predicate. */
export function nodeMatcher(podSpec: unknown): (nodeLabels: Record<string, string>) => boolean {
  const selector = field(podSpec, "nodeSelector");
  const wanted =
    selector !== null && typeof selector === "object" ? Object.entries(selector as Record<string, unknown>) : [];
  const terms = field(
    podSpec,
    "affinity",
    "nodeAffinity",
    "requiredDuringSchedulingIgnoredDuringExecution",
    "nodeSelectorTerms",
  );
  const anyOf = Array.isArray(terms) ? terms.map(requirements).filter((term) => term.length > 0) : [];
  return (nodeLabels) =>
    wanted.every(([key, value]) => nodeLabels[key] === value) &&
    (anyOf.length === 0 || anyOf.some((term) => term.every((one) => requirementHolds(one, nodeLabels))));
}

/** The value a pod's nodeSelector (or a single-valued required `In` term) pins `key` to. */
export function pinnedValue(podSpec: unknown, key: string): string | undefined {
  const selected = field(podSpec, "nodeSelector", key);
  if (typeof selected === "string") return selected;
  const terms = field(
    podSpec,
    "affinity",
    "nodeAffinity",
    "requiredDuringSchedulingIgnoredDuringExecution",
    "nodeSelectorTerms",
  );
  if (!Array.isArray(terms) || terms.length !== 1) return undefined;
  const found = requirements(terms[0]).find((one) => one.key === key && one.operator === "In");
  return found?.values.length === 1 ? found.values[0] : undefined;
}
