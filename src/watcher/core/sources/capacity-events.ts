/**
 * The cluster-autoscaler's own events, from the capacity source's Event watch (field selector
 * `source=cluster-autoscaler`, D394): `NotTriggerScaleUp` (a pod the autoscaler will not add a
 * node for) is `capacity.pending`, a warning; `TriggeredScaleUp` is `capacity.scaleup` and every
 * `ScaleDown*` reason `capacity.scaledown`, info (stored, never paged: D393), except
 * `ScaleDownFailed`, a warning. The uid is the involved object's (a pod, a node, the status
 * ConfigMap). Events of the first list are history and page nothing; each later add or update is
 * one occurrence the dispatcher's dedup counts. Stateless. Pure.
 */
import type { Severity, Signal } from "../signal.ts";
import type { KubeObject } from "../source-spec.ts";
import { text } from "./source-fields.ts";

/** The component the autoscaler records its events as. */
export const AUTOSCALER_COMPONENT = "cluster-autoscaler";

function classify(reason: string): { kind: string; severity: Severity } | undefined {
  if (reason === "NotTriggerScaleUp") return { kind: "capacity.pending", severity: "warning" };
  if (reason === "TriggeredScaleUp") return { kind: "capacity.scaleup", severity: "info" };
  if (reason === "ScaleDownFailed") return { kind: "capacity.scaledown", severity: "warning" };
  if (reason.startsWith("ScaleDown")) return { kind: "capacity.scaledown", severity: "info" };
  return undefined;
}

/** The capacity signal an autoscaler event stands for, or undefined when it is not one of ours. */
export function capacityEventSignal(event: KubeObject, now: number): Signal | undefined {
  const reason = text(event.reason);
  const found = classify(reason);
  if (!found) return undefined;
  const involved = (event.involvedObject ?? {}) as Record<string, unknown>;
  const kindOfObject = text(involved.kind);
  const namespace = text(involved.namespace);
  const name = text(involved.name);
  return {
    kind: found.kind,
    reason: found.kind.slice("capacity.".length),
    namespace,
    kindOfObject,
    name,
    uid: text(involved.uid) || `${kindOfObject.toLowerCase()}:${namespace}/${name}`,
    message: `${reason}: ${text(event.message)}`,
    eventCount: 1,
    firstSeen: now,
    lastSeen: now,
    type: "",
    severity: found.severity,
    ...(kindOfObject === "Node" ? { node: name } : {}),
  };
}
