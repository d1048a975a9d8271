/**
 * The workloads the topology-drift source judges (D408): each Deployment, StatefulSet or bare
 * ReplicaSet with its pods (only pods that belong to one are kept), its template's intent (from
 * the watched workload; from one of its pods until the workload is seen) and, per axis, where its
 * pods run now. A subject is forgotten when its workload is deleted and its last pod is gone.
 * Pure.
 */
import type { KubeObject, ObjectChange } from "../source-spec.ts";
import { type PodState, type Workload, podState, podWorkload, workloadKey } from "./leeway-fields.ts";
import { controller, field, meta, text } from "./source-fields.ts";
import type { Baseline } from "./topology-intent.ts";

export interface TrackedPod {
  subject: string;
  node: string;
  state: PodState;
  /** The pod's own scheduling parts (used while the subject has no template yet). */
  spec: Record<string, unknown>;
}

export interface AxisState {
  driftSince?: number | undefined;
  baseline?: Baseline;
}

export interface Subject {
  workload: Workload;
  /** The workload's UID once watched, else `workload:<ns>/<Kind>/<name>`. */
  uid: string;
  /** The template's scheduling parts (topologySpreadConstraints, affinity, nodeSelector). */
  template?: Record<string, unknown>;
  /** The workload object itself was seen (and not deleted). */
  declared: boolean;
  pods: Set<string>;
  axes: Map<string, AxisState>;
  fired: boolean;
}

/** The scheduling parts of a pod spec, all the source keeps of it. */
export function schedulingParts(podSpec: unknown): Record<string, unknown> {
  const parts: Record<string, unknown> = {};
  for (const name of ["topologySpreadConstraints", "affinity", "nodeSelector"]) {
    const value = field(podSpec, name);
    if (value !== undefined) parts[name] = value;
  }
  return parts;
}

export class SubjectIndex {
  readonly subjects = new Map<string, Subject>();
  readonly pods = new Map<string, TrackedPod>();

  get size(): { subjects: number; pods: number } {
    return { subjects: this.subjects.size, pods: this.pods.size };
  }

  /** A Deployment or StatefulSet (or a ReplicaSet without a Deployment) changed. */
  workload(kind: Workload["kind"], change: ObjectChange, object: KubeObject): void {
    const { namespace, name, uid } = meta(object);
    const key = workloadKey({ kind, namespace, name });
    if (change === "delete") {
      const subject = this.subjects.get(key);
      if (!subject) return;
      subject.declared = false;
      if (subject.pods.size === 0) this.subjects.delete(key);
      return;
    }
    const subject = this.#subject({ kind, namespace, name });
    subject.uid = uid || subject.uid;
    subject.template = schedulingParts(field(object, "spec", "template", "spec"));
    subject.declared = true;
  }

  pod(change: ObjectChange, object: KubeObject): void {
    const { uid } = meta(object);
    const before = this.pods.get(uid);
    const workload = change === "delete" ? undefined : podWorkload(object);
    const state = change === "delete" ? undefined : podState(object);
    if (!workload || !state) {
      if (before) this.#drop(uid, before);
      return;
    }
    const key = workloadKey(workload);
    if (before && before.subject !== key) this.#drop(uid, before);
    const subject = this.#subject(workload);
    // A StatefulSet or a bare ReplicaSet is the pod's own owner: its UID is known from the pod.
    const owner = controller(object);
    if (workload.kind !== "Deployment" && owner?.uid && !subject.declared) subject.uid = owner.uid;
    subject.pods.add(uid);
    this.pods.set(uid, {
      subject: key,
      node: text(field(object, "spec", "nodeName")),
      state,
      spec: before?.spec ?? schedulingParts(field(object, "spec")),
    });
  }

  /** What the subject's pods say their scheduling intent is: the template, else one of its pods. */
  intentSpec(subject: Subject): Record<string, unknown> {
    if (subject.template) return subject.template;
    for (const uid of subject.pods) {
      const pod = this.pods.get(uid);
      if (pod) return pod.spec;
    }
    return {};
  }

  #subject(workload: Workload): Subject {
    const key = workloadKey(workload);
    const found = this.subjects.get(key);
    if (found) return found;
    const subject: Subject = {
      workload,
      uid: `workload:${key}`,
      declared: false,
      pods: new Set(),
      axes: new Map(),
      fired: false,
    };
    this.subjects.set(key, subject);
    return subject;
  }

  #drop(uid: string, pod: TrackedPod): void {
    this.pods.delete(uid);
    const subject = this.subjects.get(pod.subject);
    if (!subject) return;
    subject.pods.delete(uid);
    if (subject.pods.size === 0 && !subject.declared) this.subjects.delete(pod.subject);
  }
}
