/**
 * `capacity.pending-aged`: a pod Pending, unbound, with `PodScheduled=False` reason
 * `Unschedulable`, for `--pending-age` (5m) is a warning, and once more, critical, at 15m (or
 * `--pending-age` when that is longer). Its age counts from the PodScheduled condition's
 * lastTransitionTime (else the pod's creation, else its first sight; never later than now), and it
 * is level-triggered: a pod already that old in the first list is reported at the
 * first judgement once armed. Scheduled, no longer Unschedulable, or deleted, the pod is forgotten
 * (it pages again if it returns); only unschedulable pods are held. Pure.
 */
import { goDuration } from "../go-time.ts";
import type { OpenCondition } from "../open-conditions.ts";
import type { Signal } from "../signal.ts";
import type { KubeObject, ObjectChange } from "../source-spec.ts";
import { condition, controller, field, type Meta, meta, sourceSignal, text, time } from "./source-fields.ts";

export interface PendingSettings {
  warnMs: number;
  criticalMs: number;
}

interface PendingPod {
  meta: Meta;
  since: number;
  level: 0 | 1 | 2;
  why: string;
  controllerRef?: string;
}

/** Whether the scheduler found no node for the pod (Pending, unbound, PodScheduled=False/Unschedulable). */
export function unschedulable(pod: KubeObject): boolean {
  if (text(field(pod, "status", "phase")) !== "Pending" || text(field(pod, "spec", "nodeName")) !== "") return false;
  const scheduled = condition(pod, "PodScheduled");
  return scheduled?.status === "False" && scheduled.reason === "Unschedulable";
}

export class PendingAging {
  readonly #settings: PendingSettings;
  readonly #pods = new Map<string, PendingPod>();

  constructor(settings: PendingSettings) {
    this.#settings = settings;
  }

  get size(): number {
    return this.#pods.size;
  }

  observe(change: ObjectChange, pod: KubeObject, now: number): void {
    const identity = meta(pod);
    if (change === "delete" || !unschedulable(pod)) {
      this.#pods.delete(identity.uid);
      return;
    }
    const scheduled = condition(pod, "PodScheduled");
    const before = this.#pods.get(identity.uid);
    const owner = controller(pod);
    const since =
      before?.since ?? Math.min(scheduled?.since ?? time(field(pod, "metadata", "creationTimestamp")) ?? now, now);
    this.#pods.set(identity.uid, {
      meta: identity,
      since,
      level: before?.level ?? 0,
      why: scheduled?.message || "Unschedulable",
      ...(owner ? { controllerRef: `${owner.kind}/${owner.name}` } : {}),
    });
  }

  /** Pods that paged and are still Pending and Unschedulable: gone once scheduled or deleted (D437). */
  *open(): Iterable<OpenCondition> {
    for (const [uid, pod] of this.#pods) if (pod.level > 0) yield { uid, reason: "pending-aged" };
  }

  judge(now: number): Signal[] {
    const signals: Signal[] = [];
    const { warnMs, criticalMs } = this.#settings;
    for (const pod of this.#pods.values()) {
      const age = now - pod.since;
      const level = age >= criticalMs ? 2 : age >= warnMs ? 1 : 0;
      if (level <= pod.level) continue;
      pod.level = level;
      signals.push(
        sourceSignal({
          kind: "capacity.pending-aged",
          reason: "pending-aged",
          object: pod.meta,
          kindOfObject: "Pod",
          severity: level === 2 ? "critical" : "warning",
          now,
          message: `pod ${pod.meta.namespace}/${pod.meta.name} Pending and Unschedulable for ${goDuration(age)}: ${pod.why}`,
          ...(pod.controllerRef ? { controllerRef: pod.controllerRef } : {}),
        }),
      );
    }
    return signals;
  }
}
