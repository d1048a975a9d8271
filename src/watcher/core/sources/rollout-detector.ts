/**
 * The `rollout` source (docs/watcher.md#rollout): a Deployment or StatefulSet in
 * the middle of a rollout whose new revision gains no ready replica for `--rollout-observe` while
 * the old revision still serves (its ready ratio at least 0.9) is `rollout.stall` (warning, uid =
 * the workload's UID). A Deployment is rolling when its newest ReplicaSet (by the
 * `deployment.kubernetes.io/revision` annotation) wants replicas while an older one still does; a
 * StatefulSet when `updateRevision` differs from `currentRevision`, its revisions' ready counts
 * read from its pods' `controller-revision-hash` label. The countdown restarts whenever the new
 * revision's ready count grows or the rollout changes (a new revision, a rollback); a stall fires
 * once and is forgotten when the rollout completes or is rolled back, so a later stall pages
 * again (D380). Judged on the tick (every 15s; a quarter of a shorter observe time, D437); state
 * is only kept for live objects. Pure.
 */
import { goDuration } from "../go-time.ts";
import type { OpenCondition } from "../open-conditions.ts";
import type { Signal } from "../signal.ts";
import type { Detector, KubeObject, ObjectChange, SourceSpec } from "../source-spec.ts";
import {
  annotation,
  condition,
  controller,
  count,
  field,
  label,
  listWatch,
  type Meta,
  meta,
  sourceSignal,
  text,
} from "./source-fields.ts";

export interface RolloutSettings {
  /** `--rollout-observe`: how long the new revision may gain no ready replica. */
  observeMs: number;
  /** The old revision's ready ratio that counts as "still serving". */
  oldReadyRatio: number;
}

export const ROLLOUT_DEFAULTS: RolloutSettings = { observeMs: 3 * 60_000, oldReadyRatio: 0.9 };

/** The sweep of the reference (every 15s), shortened for a short `--rollout-observe`, never below MIN_TICK_MS. */
export const ROLLOUT_TICK_MS = 15_000;
const MIN_TICK_MS = 100;

interface ReplicaSetState {
  owner: string;
  name: string;
  revision: number;
  desired: number;
  ready: number;
}

interface PodState {
  owner: string;
  revision: string;
  ready: boolean;
}

interface Workload {
  kind: "Deployment" | "StatefulSet";
  meta: Meta;
  /** StatefulSets only. */
  currentRevision?: string;
  updateRevision?: string;
}

interface Countdown {
  /** What is being rolled out: the new ReplicaSet's UID or the StatefulSet's updateRevision. */
  rollout: string;
  since: number;
  newReady: number;
  fired: boolean;
}

interface Progress {
  rollout: string;
  label: string;
  newReady: number;
  newDesired: number;
  oldReady: number;
  oldDesired: number;
}

function replicaSetState(object: KubeObject): ReplicaSetState | undefined {
  const owner = controller(object);
  if (owner?.kind !== "Deployment") return undefined;
  const revision = Number(annotation(object, "deployment.kubernetes.io/revision"));
  return {
    owner: owner.uid,
    name: meta(object).name,
    revision: Number.isFinite(revision) ? revision : 0,
    desired: count(field(object, "spec", "replicas")),
    ready: count(field(object, "status", "readyReplicas")),
  };
}

function podState(object: KubeObject): PodState | undefined {
  const owner = controller(object);
  if (owner?.kind !== "StatefulSet") return undefined;
  return {
    owner: owner.uid,
    revision: label(object, "controller-revision-hash") ?? "",
    ready: condition(object, "Ready")?.status === "True",
  };
}

export class RolloutDetector implements Detector {
  readonly #settings: RolloutSettings;
  readonly #workloads = new Map<string, Workload>();
  readonly #replicaSets = new Map<string, Map<string, ReplicaSetState>>();
  readonly #pods = new Map<string, Map<string, PodState>>();
  readonly #countdowns = new Map<string, Countdown>();
  /** A child's owner UID (ReplicaSets and StatefulSet pods; UIDs are unique across kinds). */
  readonly #ownerOf = new Map<string, string>();

  constructor(settings: RolloutSettings) {
    this.#settings = settings;
  }

  /** Entries held (the bounded-state check of the unit tests). */
  get size(): { workloads: number; replicaSets: number; pods: number; countdowns: number } {
    const inner = (map: Map<string, Map<string, unknown>>) => [...map.values()].reduce((sum, one) => sum + one.size, 0);
    return {
      workloads: this.#workloads.size,
      replicaSets: inner(this.#replicaSets),
      pods: inner(this.#pods),
      countdowns: this.#countdowns.size,
    };
  }

  observe(watch: string, change: ObjectChange, object: KubeObject, _now: number, _initial: boolean): Signal[] {
    const { uid } = meta(object);
    if (uid === "") return [];
    if (watch === "deployments" || watch === "statefulsets") this.#workload(watch, change, object);
    else if (watch === "replicasets")
      this.#child(this.#replicaSets, uid, change === "delete" ? undefined : replicaSetState(object));
    else if (watch === "pods") this.#child(this.#pods, uid, change === "delete" ? undefined : podState(object));
    return [];
  }

  /** Stalls that fired and still hold: gone once the rollout completes, is rolled back or the workload is deleted (D437). */
  *open(): Iterable<OpenCondition> {
    for (const [uid, countdown] of this.#countdowns) if (countdown.fired) yield { uid, reason: "rollout_stall" };
  }

  tick(now: number): Signal[] {
    const signals: Signal[] = [];
    for (const [uid, workload] of this.#workloads) {
      const progress = this.#progress(uid, workload);
      const signal = progress ? this.#judge(uid, workload, progress, now) : undefined;
      if (!progress) this.#countdowns.delete(uid);
      if (signal) signals.push(signal);
    }
    return signals;
  }

  #workload(watch: string, change: ObjectChange, object: KubeObject): void {
    const { uid } = meta(object);
    if (change === "delete") {
      this.#workloads.delete(uid);
      this.#countdowns.delete(uid);
      return;
    }
    if (watch === "deployments") this.#workloads.set(uid, { kind: "Deployment", meta: meta(object) });
    else
      this.#workloads.set(uid, {
        kind: "StatefulSet",
        meta: meta(object),
        currentRevision: text(field(object, "status", "currentRevision")),
        updateRevision: text(field(object, "status", "updateRevision")),
      });
  }

  /** Files a child (ReplicaSet, pod) under its owner's UID, moving or forgetting it as it changes. */
  #child<T extends { owner: string }>(index: Map<string, Map<string, T>>, uid: string, state: T | undefined): void {
    const before = this.#ownerOf.get(uid);
    const siblings = before === undefined ? undefined : index.get(before);
    if (before !== undefined && siblings?.delete(uid) && siblings.size === 0) index.delete(before);
    this.#ownerOf.delete(uid);
    if (!state) return;
    this.#ownerOf.set(uid, state.owner);
    const children = index.get(state.owner) ?? new Map<string, T>();
    children.set(uid, state);
    index.set(state.owner, children);
  }

  /** The rollout in progress, or undefined when the workload is not rolling. */
  #progress(uid: string, workload: Workload): Progress | undefined {
    if (workload.kind === "Deployment") {
      const sets = [...(this.#replicaSets.get(uid)?.entries() ?? [])].sort((a, b) => b[1].revision - a[1].revision);
      const [newest, ...older] = sets;
      const serving = older.filter(([, set]) => set.desired > 0);
      if (!newest || newest[1].desired <= 0 || serving.length === 0) return undefined;
      return {
        rollout: newest[0],
        label: `revision ${newest[1].revision} (ReplicaSet ${newest[1].name})`,
        newReady: newest[1].ready,
        newDesired: newest[1].desired,
        oldReady: serving.reduce((sum, [, set]) => sum + set.ready, 0),
        oldDesired: serving.reduce((sum, [, set]) => sum + set.desired, 0),
      };
    }
    const { currentRevision, updateRevision } = workload;
    if (!currentRevision || !updateRevision || currentRevision === updateRevision) return undefined;
    const pods = [...(this.#pods.get(uid)?.values() ?? [])];
    const of = (revision: string) => pods.filter((pod) => pod.revision === revision);
    return {
      rollout: updateRevision,
      label: `revision ${updateRevision}`,
      newReady: of(updateRevision).filter((pod) => pod.ready).length,
      newDesired: of(updateRevision).length,
      oldReady: of(currentRevision).filter((pod) => pod.ready).length,
      oldDesired: of(currentRevision).length,
    };
  }

  #judge(uid: string, workload: Workload, progress: Progress, now: number): Signal | undefined {
    let countdown = this.#countdowns.get(uid);
    // A new rollout (or a rollback, which makes another revision the newest) starts a new countdown.
    if (!countdown || countdown.rollout !== progress.rollout) {
      countdown = { rollout: progress.rollout, since: now, newReady: progress.newReady, fired: false };
      this.#countdowns.set(uid, countdown);
    }
    if (progress.newReady > countdown.newReady) {
      countdown.since = now;
    }
    countdown.newReady = progress.newReady;
    const oldRatio = progress.oldDesired > 0 ? progress.oldReady / progress.oldDesired : 0;
    if (countdown.fired || now - countdown.since < this.#settings.observeMs || oldRatio < this.#settings.oldReadyRatio)
      return undefined;
    countdown.fired = true;
    const { kind, meta: object } = workload;
    return sourceSignal({
      kind: "rollout.stall",
      reason: "rollout_stall",
      object,
      kindOfObject: kind,
      severity: "warning",
      now,
      message: `${kind} ${object.namespace}/${object.name} rollout stalled: ${progress.label} has ${progress.newReady}/${progress.newDesired} ready with no progress for ${goDuration(now - countdown.since)}, while the old revision serves ${progress.oldReady}/${progress.oldDesired} ready`,
    });
  }
}

export const ROLLOUT_SPEC: SourceSpec<RolloutSettings> = {
  name: "rollout",
  reasons: ["rollout_stall"],
  scope: "cluster",
  required: [
    ...listWatch("", "pods"),
    ...listWatch("apps", "deployments"),
    ...listWatch("apps", "replicasets"),
    ...listWatch("apps", "statefulsets"),
  ],
  watches: [
    { name: "deployments", path: "/apis/apps/v1/deployments" },
    { name: "replicasets", path: "/apis/apps/v1/replicasets" },
    { name: "statefulsets", path: "/apis/apps/v1/statefulsets" },
    { name: "pods", path: "/api/v1/pods" },
  ],
  tickMs: ROLLOUT_TICK_MS,
  // A countdown is judged at least four times per observe time (every 15s at the default 3m), D437.
  tickFor: (settings) => Math.min(ROLLOUT_TICK_MS, Math.max(MIN_TICK_MS, Math.floor(settings.observeMs / 4))),
  detector: (settings) => new RolloutDetector(settings),
};
