/**
 * The compute-class source's portable model (D411): a compute class is a ranked list of
 * priorities (rank 0 preferred, later ranks fallbacks). A node belongs to a class by the label
 * `cloud.google.com/compute-class`; its rank is the `compute-class.spar.dev/rank` annotation (a
 * label of the same key when no annotation: node pools can set labels only), a whole number from
 * 0. With `--compute-class-infer` the rank is also inferred from the class's declared priorities
 * (a `cloud.google.com/v1` ComputeClass, when discovery finds the resource): the first priority
 * whose machine family, machine type, spot and node-pool fields the node's labels match. The
 * annotation always wins; a node whose annotated and inferred ranks differ is counted in
 * `watcher_leeway_preference_disagreement`. A pod belongs to the class its nodeSelector (or a
 * single-valued required affinity term) pins, else to its node's class. Pure.
 */
import type { KubeObject } from "../source-spec.ts";
import { labels, nodeUsable, pinnedValue } from "./leeway-fields.ts";
import { annotation, field, meta, text } from "./source-fields.ts";

export const CLASS_LABEL = "cloud.google.com/compute-class";
export const RANK_KEY = "compute-class.spar.dev/rank";

/** The node labels a priority rule's fields are matched against (GKE's well-known labels). */
const RULE_LABELS = {
  machineFamily: "cloud.google.com/machine-family",
  machineType: "node.kubernetes.io/instance-type",
  spot: "cloud.google.com/gke-spot",
  nodepools: "cloud.google.com/gke-nodepool",
} as const;

/** One declared priority: the fields spar can match against node labels (others are not judged). */
export interface PriorityRule {
  machineFamily?: string;
  machineType?: string;
  spot?: boolean;
  nodepools?: string[];
}

export interface ClassNode {
  class: string;
  usable: boolean;
  /** The rank the node runs at: annotated, else inferred; undefined when neither is known. */
  rank: number | undefined;
  annotated: number | undefined;
  labels: Record<string, string>;
}

function wholeNumber(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d{1,3}$/.test(value.trim())) return undefined;
  return Number(value.trim());
}

/** A node of a class (undefined for a node without the class label). The rank is settled by `rankOf`. */
export function classNode(object: KubeObject): ClassNode | undefined {
  const nodeLabels = labels(object);
  const name = nodeLabels[CLASS_LABEL];
  if (name === undefined || name === "") return undefined;
  const annotated = wholeNumber(annotation(object, RANK_KEY) ?? nodeLabels[RANK_KEY]);
  return { class: name, usable: nodeUsable(object), rank: annotated, annotated, labels: nodeLabels };
}

function ruleMatches(rule: PriorityRule, nodeLabels: Record<string, string>): boolean {
  let judged = false;
  if (rule.machineFamily !== undefined) {
    judged = true;
    if (nodeLabels[RULE_LABELS.machineFamily] !== rule.machineFamily) return false;
  }
  if (rule.machineType !== undefined) {
    judged = true;
    if (nodeLabels[RULE_LABELS.machineType] !== rule.machineType) return false;
  }
  if (rule.spot !== undefined) {
    judged = true;
    if ((nodeLabels[RULE_LABELS.spot] === "true") !== rule.spot) return false;
  }
  if (rule.nodepools !== undefined) {
    judged = true;
    if (!rule.nodepools.includes(nodeLabels[RULE_LABELS.nodepools] ?? "")) return false;
  }
  // A rule with nothing spar can match (only minCores, gpu...) infers nothing.
  return judged;
}

/** The first declared priority the node's labels match. */
export function inferRank(rules: readonly PriorityRule[], nodeLabels: Record<string, string>): number | undefined {
  const found = rules.findIndex((rule) => ruleMatches(rule, nodeLabels));
  return found === -1 ? undefined : found;
}

/** A ComputeClass's declared priorities (`spec.priorities`), in rank order. */
export function declaredPriorities(object: unknown): { name: string; rules: PriorityRule[] } {
  const name = meta(object as KubeObject).name;
  const priorities = field(object, "spec", "priorities");
  const rules = (Array.isArray(priorities) ? priorities : []).map((priority): PriorityRule => {
    const rule: PriorityRule = {};
    const family = text(field(priority, "machineFamily"));
    const type = text(field(priority, "machineType"));
    const spot = field(priority, "spot");
    const pools = field(priority, "nodepools");
    if (family) rule.machineFamily = family;
    if (type) rule.machineType = type;
    if (typeof spot === "boolean") rule.spot = spot;
    if (Array.isArray(pools)) rule.nodepools = pools.map(text);
    return rule;
  });
  return { name, rules };
}

/** The class a pod asks for (nodeSelector or a single-valued required affinity term). */
export function podClass(pod: KubeObject): string | undefined {
  return pinnedValue(field(pod, "spec"), CLASS_LABEL);
}
