/**
 * The workload half of the object-state detector (D376): a pod's summed restarts growing by the
 * burst within the window (`restart_burst`) and a pod turning Evicted (told to the node half); a
 * Deployment without progress for the fraction of its progressDeadlineSeconds while replicas are
 * unready (`progress_deadline`, a countdown: level-triggered, so one already stuck when listed
 * fires once armed); a Service's ready endpoints, summed over its EndpointSlices, going to zero
 * (`endpoints_empty`); a PDB's disruptionsAllowed going to zero while it has pods
 * (`pdb_gridlocked`). Each clears when its condition ends and may then fire again. Pure.
 */
import { goDuration } from "../go-time.ts";
import type { Signal } from "../signal.ts";
import type { KubeObject, ObjectChange } from "../source-spec.ts";
import { type Meta, type ObjectStateSettings, condition, meta, objectStateSignal } from "./object-state-common.ts";
import { time } from "./source-fields.ts";

interface PodState {
  /** Restart samples in the window; the first is the window's anchor. */
  samples: Array<{ at: number; restarts: number }>;
  burst: boolean;
  evicted: boolean;
  seen: number;
}

interface ContainerStatus {
  restartCount?: number;
}

function summedRestarts(pod: KubeObject): number {
  const status = (pod.status ?? {}) as {
    containerStatuses?: ContainerStatus[];
    initContainerStatuses?: ContainerStatus[];
  };
  return [...(status.containerStatuses ?? []), ...(status.initContainerStatuses ?? [])].reduce(
    (sum, container) => sum + (container.restartCount ?? 0),
    0,
  );
}

function podNode(pod: KubeObject): string {
  return String((pod.spec as { nodeName?: string } | undefined)?.nodeName ?? "");
}

function controllerRef(object: Meta): string | undefined {
  const owner = object.ownerReferences.find((one) => one.controller) ?? object.ownerReferences[0];
  return owner?.kind && owner.name ? `${owner.kind}/${owner.name}` : undefined;
}

export class PodTracker {
  readonly #pods = new Map<string, PodState>();

  constructor(private readonly settings: ObjectStateSettings) {}

  get size(): number {
    return this.#pods.size;
  }

  /** Signals of the pod, and the node it was evicted from (for the node half), if it just was. */
  observe(change: ObjectChange, pod: KubeObject, now: number): { signals: Signal[]; evictedFrom?: string } {
    const current = meta(pod);
    if (change === "delete") {
      this.#pods.delete(current.uid);
      return { signals: [] };
    }
    const restarts = summedRestarts(pod);
    const evicted = (pod.status as { reason?: string } | undefined)?.reason === "Evicted";
    const state = this.#pods.get(current.uid);
    if (!state) {
      this.#pods.set(current.uid, { samples: [{ at: now, restarts }], burst: false, evicted, seen: now });
      return { signals: [] };
    }
    state.seen = now;
    const evictedFrom = evicted && !state.evicted ? podNode(pod) : undefined;
    state.evicted = evicted;
    const last = state.samples.at(-1);
    if (last && restarts !== last.restarts) {
      state.samples = this.#windowed([...state.samples, { at: now, restarts }], now);
    }
    const signals: Signal[] = [];
    const growth = restarts - (state.samples[0]?.restarts ?? restarts);
    if (!state.burst && growth >= this.settings.restartBurst) {
      state.burst = true;
      const node = podNode(pod);
      const ref = controllerRef(current);
      signals.push(
        objectStateSignal({
          reason: "restart_burst",
          object: current,
          kindOfObject: "Pod",
          severity: "warning",
          message: `pod restarts grew by ${growth} within ${goDuration(this.settings.restartWindowMs)} (now ${restarts})`,
          now,
          ...(node ? { node } : {}),
          ...(ref ? { controllerRef: ref } : {}),
        }),
      );
    }
    return { signals, ...(evictedFrom ? { evictedFrom } : {}) };
  }

  /** Samples within the window, keeping the newest older one as the anchor the growth counts from. */
  #windowed(samples: Array<{ at: number; restarts: number }>, now: number): Array<{ at: number; restarts: number }> {
    const start = now - this.settings.restartWindowMs;
    let first = 0;
    while (first + 1 < samples.length && (samples[first + 1]?.at ?? now) <= start) first++;
    return samples.slice(first);
  }

  tick(now: number): void {
    for (const [uid, state] of this.#pods) {
      if (now - state.seen > this.settings.stateTtlMs) {
        this.#pods.delete(uid);
        continue;
      }
      state.samples = this.#windowed(state.samples, now);
      const latest = state.samples.at(-1)?.restarts ?? 0;
      if (state.burst && latest - (state.samples[0]?.restarts ?? latest) < this.settings.restartBurst)
        state.burst = false;
    }
  }
}

interface DeploymentState {
  meta: Meta;
  /** When it last made progress (or the countdown's start). */
  progressAt: number;
  marks: string;
  deadlineMs: number;
  unready: number;
  paused: boolean;
  fired: boolean;
  seen: number;
}

function deploymentMarks(object: KubeObject): { marks: string; unready: number; deadlineMs: number; paused: boolean } {
  const spec = (object.spec ?? {}) as { replicas?: number; progressDeadlineSeconds?: number; paused?: boolean };
  const status = (object.status ?? {}) as {
    updatedReplicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
    observedGeneration?: number;
  };
  const generation = (object.metadata as { generation?: number } | undefined)?.generation ?? 0;
  const desired = spec.replicas ?? 1;
  return {
    marks: [generation, status.updatedReplicas ?? 0, status.readyReplicas ?? 0, status.availableReplicas ?? 0].join(
      "/",
    ),
    unready: Math.max(0, desired - (status.readyReplicas ?? 0)),
    deadlineMs: (spec.progressDeadlineSeconds ?? 600) * 1000,
    paused: spec.paused === true,
  };
}

export class DeploymentTracker {
  readonly #deployments = new Map<string, DeploymentState>();

  constructor(private readonly settings: ObjectStateSettings) {}

  get size(): number {
    return this.#deployments.size;
  }

  observe(change: ObjectChange, object: KubeObject, now: number): Signal[] {
    const current = meta(object);
    if (change === "delete") {
      this.#deployments.delete(current.uid);
      return [];
    }
    const read = deploymentMarks(object);
    const state = this.#deployments.get(current.uid);
    if (!state) {
      // The countdown starts at the last progress the Deployment itself recorded (level-triggered).
      const recorded = time(condition(object, "Progressing")?.lastUpdateTime);
      const progressAt = Math.min(now, recorded ?? now);
      this.#deployments.set(current.uid, { meta: current, progressAt, fired: false, seen: now, ...read });
      return this.#judge(current.uid, now);
    }
    if (read.marks !== state.marks) state.progressAt = now;
    Object.assign(state, { meta: current, seen: now, ...read });
    return this.#judge(current.uid, now);
  }

  #judge(uid: string, now: number): Signal[] {
    const state = this.#deployments.get(uid);
    if (!state) return [];
    if (state.unready === 0 || state.paused) {
      state.fired = false;
      return [];
    }
    const limit = this.settings.progressFraction * state.deadlineMs;
    if (state.fired || now - state.progressAt <= limit) return [];
    state.fired = true;
    return [
      objectStateSignal({
        reason: "progress_deadline",
        object: state.meta,
        kindOfObject: "Deployment",
        severity: "warning",
        message: `deployment made no rollout progress for ${goDuration(now - state.progressAt)} with ${state.unready} unready replicas (progressDeadlineSeconds ${state.deadlineMs / 1000})`,
        now,
      }),
    ];
  }

  tick(now: number): Signal[] {
    const signals: Signal[] = [];
    for (const [uid, state] of this.#deployments) {
      if (now - state.seen > this.settings.stateTtlMs) this.#deployments.delete(uid);
      else signals.push(...this.#judge(uid, now));
    }
    return signals;
  }
}
