/**
 * The `compute-class` source (docs/watcher.md#compute-class; spar's own design, D21, D411, D412).
 * Watches nodes and pods, and reads `cloud.google.com/v1` ComputeClasses every minute when
 * discovery finds them. It keeps only nodes that carry a class and pods pinned to one
 * (compute-class-model.ts), and judges each class at every sweep (compute-class-rules.ts). Node
 * ranks are settled at each change and at each ComputeClass read. Progress (a pod of the class
 * placed, a usable node joining it) is only counted after the first list, so a class wedged at
 * startup is reported a dwell after the watcher started. Series (read at scrape time):
 * `watcher_leeway_preference_disagreement{class}`, `watcher_leeway_rank_pods{class,rank}`,
 * `watcher_leeway_rank_unused{class,rank}`. Pure.
 */
import type { Signal } from "../signal.ts";
import type { Detector, KubeObject, ObjectChange, SeriesFamily, SourceSpec } from "../source-spec.ts";
import { type PodState, podState } from "./leeway-fields.ts";
import {
  type ClassNode,
  classNode,
  declaredPriorities,
  inferRank,
  podClass,
  type PriorityRule,
} from "./compute-class-model.ts";
import {
  type ClassState,
  type ClassView,
  type ComputeClassSettings,
  judgeDegraded,
  judgeMigration,
  judgeUnused,
  judgeWedged,
  newClassState,
} from "./compute-class-rules.ts";
import { condition, field, listWatch, meta, text, time } from "./source-fields.ts";

interface ClassPod {
  class: string;
  node: string;
  state: PodState;
  pendingSince: number;
}

interface SettledNode extends ClassNode {
  inferred: number | undefined;
}

export class ComputeClassDetector implements Detector {
  readonly #nodes = new Map<string, SettledNode>();
  readonly #pods = new Map<string, ClassPod>();
  readonly #declared = new Map<string, PriorityRule[]>();
  readonly #classes = new Map<string, ClassState>();

  constructor(readonly settings: ComputeClassSettings) {}

  get size(): { nodes: number; pods: number; classes: number } {
    return { nodes: this.#nodes.size, pods: this.#pods.size, classes: this.#classes.size };
  }

  observe(watch: string, change: ObjectChange, object: KubeObject, now: number, initial: boolean): Signal[] {
    if (watch === "nodes") this.#node(change, object, now, initial);
    else if (watch === "pods") this.#pod(change, object, now, initial);
    return [];
  }

  polled(poll: string, body: unknown): Signal[] {
    // A failed read keeps what was declared (a transient error un-declares nothing).
    const items = field(body, "items");
    if (poll !== "computeclasses" || !Array.isArray(items)) return [];
    this.#declared.clear();
    for (const item of items) {
      const { name, rules } = declaredPriorities(item);
      if (name) this.#declared.set(name, rules);
    }
    for (const node of this.#nodes.values()) this.#settle(node);
    return [];
  }

  tick(now: number): Signal[] {
    const signals: Signal[] = [];
    const views = this.#views();
    // A class with no node, pod or declaration left is forgotten.
    for (const name of this.#classes.keys()) if (!views.has(name)) this.#classes.delete(name);
    for (const [name, view] of views) {
      const state = this.#class(name, now);
      signals.push(
        ...judgeWedged(view, state, this.settings, now),
        ...judgeDegraded(view, state, this.settings, now),
        ...judgeMigration(view, state, this.settings, now),
        ...judgeUnused(view, state, this.settings, now),
      );
    }
    return signals;
  }

  series(): SeriesFamily[] {
    const disagreement: SeriesFamily["samples"] = [];
    const rankPods: SeriesFamily["samples"] = [];
    const unused: SeriesFamily["samples"] = [];
    for (const [name, view] of this.#views()) {
      const disagree = [...this.#nodes.values()].filter(
        (node) =>
          node.class === name &&
          node.annotated !== undefined &&
          node.inferred !== undefined &&
          node.annotated !== node.inferred,
      ).length;
      disagreement.push({ labels: { class: name }, value: disagree });
      for (const [rank, count] of view.placed)
        rankPods.push({ labels: { class: name, rank: String(rank) }, value: count });
      const state = this.#classes.get(name);
      for (let rank = 0; rank < (view.declared?.length ?? 0); rank++)
        unused.push({ labels: { class: name, rank: String(rank) }, value: state?.unused.has(rank) ? 1 : 0 });
    }
    return [
      {
        name: "leeway_preference_disagreement",
        help: "nodes whose annotated rank differs from the rank inferred from their class's priorities (the annotation wins)",
        samples: disagreement,
      },
      { name: "leeway_rank_pods", help: "placed pods of a compute class per rank", samples: rankPods },
      { name: "leeway_rank_unused", help: "1 while a declared priority has had no node for a window", samples: unused },
    ];
  }

  #class(name: string, now: number): ClassState {
    const found = this.#classes.get(name);
    if (found) return found;
    const state = newClassState(now);
    this.#classes.set(name, state);
    return state;
  }

  #settle(node: SettledNode): void {
    const rules = this.settings.infer ? this.#declared.get(node.class) : undefined;
    node.inferred = rules ? inferRank(rules, node.labels) : undefined;
    node.rank = node.annotated ?? node.inferred;
  }

  #node(change: ObjectChange, object: KubeObject, now: number, initial: boolean): void {
    const { name } = meta(object);
    const before = this.#nodes.get(name);
    const found = change === "delete" ? undefined : classNode(object);
    if (!found) {
      this.#nodes.delete(name);
      return;
    }
    const node: SettledNode = { ...found, inferred: undefined };
    this.#settle(node);
    this.#nodes.set(name, node);
    const state = this.#class(node.class, now);
    // A usable node joining the class is progress: capacity arrived.
    if (!initial && node.usable && !(before?.usable && before.class === node.class)) state.lastProgress = now;
  }

  #pod(change: ObjectChange, object: KubeObject, now: number, initial: boolean): void {
    const { uid } = meta(object);
    const before = this.#pods.get(uid);
    const name = change === "delete" ? undefined : podClass(object);
    const state = name === undefined ? undefined : podState(object);
    if (name === undefined || state === undefined) {
      this.#pods.delete(uid);
      return;
    }
    const node = text(field(object, "spec", "nodeName"));
    const scheduled = condition(object, "PodScheduled");
    const since = Math.min(now, scheduled?.since ?? time(field(object, "metadata", "creationTimestamp")) ?? now);
    this.#pods.set(uid, { class: name, node, state, pendingSince: before?.pendingSince ?? since });
    const classState = this.#class(name, now);
    // A pod of the class placed (scheduled now, or new and already scheduled) is progress.
    if (!initial && node !== "" && (!before || before.node === "")) classState.lastProgress = now;
  }

  #views(): Map<string, ClassView> {
    const views = new Map<string, ClassView>();
    const view = (name: string): ClassView => {
      const found = views.get(name);
      if (found) return found;
      const declared = this.#declared.get(name);
      const created: ClassView = {
        name,
        ...(declared ? { declared } : {}),
        usable: new Map(),
        nodes: new Map(),
        placed: new Map(),
        fallbackPods: new Set(),
        unschedulable: [],
      };
      views.set(name, created);
      return created;
    };
    const bump = (map: Map<number, number>, rank: number) => map.set(rank, (map.get(rank) ?? 0) + 1);
    for (const node of this.#nodes.values()) {
      const target = view(node.class);
      if (node.rank === undefined) continue;
      bump(target.nodes, node.rank);
      if (node.usable) bump(target.usable, node.rank);
    }
    for (const [uid, pod] of this.#pods) {
      const target = view(pod.class);
      if (pod.state === "unschedulable") target.unschedulable.push(pod.pendingSince);
      const rank = pod.node ? this.#nodes.get(pod.node)?.rank : undefined;
      if (rank === undefined || (pod.state !== "running" && pod.state !== "starting")) continue;
      bump(target.placed, rank);
      if (rank > 0) target.fallbackPods.add(uid);
    }
    for (const name of this.#declared.keys()) view(name);
    return views;
  }
}

export const COMPUTE_CLASS_SPEC: SourceSpec<ComputeClassSettings> = {
  name: "compute-class",
  reasons: ["rank_wedged", "rank_degraded", "rank_no_migration", "rank_tier_unused"],
  scope: "cluster",
  required: [...listWatch("", "nodes"), ...listWatch("", "pods")],
  watches: [
    { name: "nodes", path: "/api/v1/nodes" },
    { name: "pods", path: "/api/v1/pods" },
  ],
  polls: [
    {
      name: "computeclasses",
      path: "/apis/cloud.google.com/v1/computeclasses",
      everyMs: 60_000,
      discovery: { groupVersion: "cloud.google.com/v1", resource: "computeclasses" },
    },
  ],
  tickMs: 30_000,
  detector: (settings) => new ComputeClassDetector(settings),
};
