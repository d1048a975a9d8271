/**
 * One row of the occurrence store (`--store`): a routed signal, its route and the session it went
 * to. Pure; the store itself is src/watcher/occurrence-store.ts.
 */
import type { Signal } from "./signal.ts";

export type Route =
  | "injected"
  | "suppressed"
  | "storm"
  | "storm-member"
  | "resolved"
  | "followup"
  | "error"
  /** An info-severity signal: recorded, never paged (D393). */
  | "info-stored"
  /** A warning delivered through the watchboard's digest (D418). */
  | "watchboard"
  /** A recurrence that opened with `triage.regressed` (D421). */
  | "regressed";

export interface OccurrenceRow {
  at: number;
  route: Route;
  kind: string;
  severity: string;
  reason: string;
  namespace: string;
  kindOfObject: string;
  name: string;
  uid: string;
  cluster: string;
  /** The controlling workload, `Kind/name` (D424: the key distilled facts group by); "" when unknown. */
  workload?: string;
  sessionId?: string;
}

/** Pod-template-hash suffixes are drawn from this alphabet (Kubernetes' SafeEncodeString). */
const TEMPLATE_HASH = /^(.+)-[bcdfghjklmnpqrstvwxz2456789]{6,10}$/;
/** A Deployment's pod: `<deployment>-<template hash>-<five random>`, same alphabet. */
const DEPLOYMENT_POD = /^(.+)-[bcdfghjklmnpqrstvwxz2456789]{6,10}-[bcdfghjklmnpqrstvwxz2456789]{5}$/;

/**
 * The workload a signal belongs to, `Kind/name`: its controller, with a Deployment's ReplicaSet
 * folded into the Deployment (its name less the pod-template hash), so every rollout of one
 * Deployment lands in one fact (D424). A pod with no controller named (cluster events carry
 * none) is read from its name when it has a Deployment pod's shape; otherwise "".
 */
export function workloadOf(signal: Pick<Signal, "controllerRef" | "kindOfObject" | "name">): string {
  const ref = signal.controllerRef;
  if (!ref) {
    if (signal.kindOfObject !== "Pod") return `${signal.kindOfObject}/${signal.name}`;
    const pod = DEPLOYMENT_POD.exec(signal.name);
    return pod ? `Deployment/${pod[1]}` : "";
  }
  const slash = ref.indexOf("/");
  const kind = ref.slice(0, slash);
  const name = ref.slice(slash + 1);
  const folded = kind === "ReplicaSet" ? TEMPLATE_HASH.exec(name) : null;
  return folded ? `Deployment/${folded[1]}` : ref;
}

export function rowOf(signal: Signal, route: Route, cluster: string, at: number, sessionId?: string): OccurrenceRow {
  return {
    at,
    route,
    kind: signal.kind,
    severity: signal.severity,
    reason: signal.reason,
    namespace: signal.namespace,
    kindOfObject: signal.kindOfObject,
    name: signal.name,
    uid: signal.uid,
    cluster,
    workload: workloadOf(signal),
    ...(sessionId ? { sessionId } : {}),
  };
}
