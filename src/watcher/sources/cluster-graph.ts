/**
 * The topology graph the storm correlator and the recovery tracker read: pods and replicasets
 * kept current by informers, each started only when asked for (recovery needs pods alone; storms
 * need both) and only after the startup plan reviewed its grants. The graph is optional: its
 * watches never hold readiness, and `failing()` names those not synced (or failing now). Blast-radius keys of a pod, nearest first: its node, its owner chain
 * (ReplicaSet, then the ReplicaSet's Deployment), its namespace. Clearance of a pod: Ready=True
 * since the condition's transition (a deleted pod counts as cleared, `object_deleted`). Clearance
 * of a node (D377, when the plan gave it a nodes watch): Ready=True since the condition's
 * transition; a same-name replacement that is Ready is `recovered`, a node gone with none is
 * `object_deleted`. The graph is the one home of clearance: every Node incident is judged here,
 * whichever source raised it. Tombstones of deleted pods and nodes are kept for 2 h, then pruned
 * (at most once a minute of the graph's clock, and at most `MAX_TOMBSTONES` of each, D426). The
 * graph can be snapshotted and restored (D425): restored objects serve storm correlation at once,
 * are never trusted for clearance, and are forgotten once their watch has listed without them.
 */
import type { Logger } from "../../telemetry/logger.ts";
import type { DedupIncident } from "../core/dedup-cache.ts";
import type { ClearanceObservation } from "../core/recovery.ts";
import type { Signal } from "../core/signal.ts";
import type { Ancestor } from "../core/storm.ts";
import type { GraphContents } from "../core/graph-snapshot.ts";
import type { KubeConnection } from "../kube/kube-connection.ts";
import { RestartingInformer } from "./restarting-informer.ts";

type KubeObject = Record<string, unknown>;

interface OwnerRef {
  kind?: string;
  name?: string;
  uid?: string;
  controller?: boolean;
}

function metadata(object: KubeObject): {
  uid?: string;
  name?: string;
  namespace?: string;
  ownerReferences?: OwnerRef[];
} {
  return (object.metadata ?? {}) as never;
}

function controllerOf(object: KubeObject): OwnerRef | undefined {
  const owners = metadata(object).ownerReferences ?? [];
  return owners.find((owner) => owner.controller) ?? owners[0];
}

/** How long a deleted pod or node answers clearance as `object_deleted` (2 h, D426). */
export const TOMBSTONE_TTL_MS = 2 * 3_600_000;
/** Tombstones kept of each kind however fast the churn (oldest dropped first, D426). */
export const MAX_TOMBSTONES = 100_000;
const TOMBSTONE_SWEEP_MS = 60_000;

export interface ClusterGraphOptions {
  /** The graph's clock (tombstone times and their pruning); the pipeline's clock in tests. */
  now?: () => number;
}

export class ClusterGraph {
  private readonly pods = new Map<string, KubeObject>();
  private readonly deletedPods = new Map<string, number>();
  private readonly replicaSets = new Map<string, KubeObject>();
  /** Nodes by name (a replacement keeps the name, not the UID), and deleted ones by name. */
  private readonly nodes = new Map<string, KubeObject>();
  private readonly deletedNodes = new Map<string, number>();
  private readonly informers: RestartingInformer[];
  private readonly now: () => number;
  private lastSweep = 0;
  /** Keys restored from a snapshot and not seen by their watch since, per map (D425). */
  private readonly restored = new Map<Map<string, KubeObject>, Set<string>>();

  constructor(
    connection: KubeConnection,
    logger: Logger,
    onRestart: () => void,
    watches: { pods: boolean; replicaSets: boolean; nodes?: boolean } = { pods: true, replicaSets: true },
    options: ClusterGraphOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    const keep = (map: Map<string, KubeObject>, key: (object: KubeObject) => string) => ({
      add: (object: KubeObject) => this.seen(map, key(object), object),
      update: (object: KubeObject) => this.seen(map, key(object), object),
      remove: (object: KubeObject) => {
        const at = key(object);
        map.delete(at);
        this.restored.get(map)?.delete(at);
        if (map === this.pods) this.tombstone(this.deletedPods, at);
        if (map === this.nodes) this.tombstone(this.deletedNodes, at);
      },
    });
    const byUid = (object: KubeObject) => metadata(object).uid ?? "";
    const nodes = keep(this.nodes, (object) => metadata(object).name ?? "");
    this.informers = [
      ...(watches.nodes
        ? [new RestartingInformer("nodes", connection, "/api/v1/nodes", nodes, logger, onRestart)]
        : []),
      ...(watches.pods
        ? [new RestartingInformer("pods", connection, "/api/v1/pods", keep(this.pods, byUid), logger, onRestart)]
        : []),
      ...(watches.replicaSets
        ? [
            new RestartingInformer(
              "replicasets",
              connection,
              "/apis/apps/v1/replicasets",
              keep(this.replicaSets, byUid),
              logger,
              onRestart,
            ),
          ]
        : []),
    ];
  }

  /** A watch saw the object: it is current (a replacement node clears its tombstone). */
  private seen(map: Map<string, KubeObject>, key: string, object: KubeObject): void {
    map.set(key, object);
    this.restored.get(map)?.delete(key);
    if (map === this.nodes) this.deletedNodes.delete(key);
  }

  /** Records a deletion; prunes tombstones past the TTL at most once a sweep interval. */
  private tombstone(map: Map<string, number>, key: string): void {
    map.delete(key);
    map.set(key, this.now());
    this.pruneTombstones();
    while (map.size > MAX_TOMBSTONES) map.delete(map.keys().next().value as string);
  }

  /** Drops tombstones older than `TOMBSTONE_TTL_MS` (D426); `force` skips the once-a-minute gate. */
  pruneTombstones(force = false): number {
    const now = this.now();
    if (!force && now - this.lastSweep < TOMBSTONE_SWEEP_MS) return 0;
    this.lastSweep = now;
    let pruned = 0;
    // Insertion order is deletion order, so the oldest come first.
    for (const map of [this.deletedPods, this.deletedNodes])
      for (const [key, at] of map) {
        if (now - at < TOMBSTONE_TTL_MS) break;
        map.delete(key);
        pruned++;
      }
    return pruned;
  }

  /** Tombstones held now (pods and nodes). */
  get tombstones(): number {
    return this.deletedPods.size + this.deletedNodes.size;
  }

  /** What a snapshot keeps (D425): live objects and tombstones still inside their TTL. */
  contents(): GraphContents {
    this.forgetUnlisted();
    this.pruneTombstones(true);
    return {
      pods: [...this.pods.values()],
      replicaSets: [...this.replicaSets.values()],
      nodes: [...this.nodes.values()],
      deletedPods: [...this.deletedPods],
      deletedNodes: [...this.deletedNodes],
    };
  }

  /** Seeds the graph from a snapshot before the watches list; returns the objects restored. */
  restore(contents: GraphContents): number {
    const fill = (map: Map<string, KubeObject>, objects: KubeObject[], key: (object: KubeObject) => string) => {
      const marks = this.restored.get(map) ?? new Set<string>();
      this.restored.set(map, marks);
      for (const object of objects) {
        const at = key(object);
        if (!at || map.has(at)) continue;
        map.set(at, object);
        marks.add(at);
      }
      return marks.size;
    };
    const byUid = (object: KubeObject) => metadata(object).uid ?? "";
    const now = this.now();
    for (const [target, rows] of [
      [this.deletedPods, contents.deletedPods],
      [this.deletedNodes, contents.deletedNodes],
    ] as const)
      for (const [key, at] of [...rows].sort((a, b) => a[1] - b[1]))
        if (now - at < TOMBSTONE_TTL_MS && !target.has(key)) target.set(key, at);
    return (
      fill(this.pods, contents.pods, byUid) +
      fill(this.replicaSets, contents.replicaSets, byUid) +
      fill(this.nodes, contents.nodes, (object) => metadata(object).name ?? "")
    );
  }

  /** Once a watch has listed, what was restored and not listed is gone from the cluster. */
  private forgetUnlisted(): void {
    if (this.restored.size === 0) return;
    const watchOf = new Map<Map<string, KubeObject>, string>([
      [this.pods, "pods"],
      [this.replicaSets, "replicasets"],
      [this.nodes, "nodes"],
    ]);
    for (const [map, marks] of this.restored) {
      const informer = this.informers.find((candidate) => candidate.name === watchOf.get(map));
      if (informer && !informer.synced) continue;
      for (const key of marks) map.delete(key);
      this.restored.delete(map);
    }
  }

  /** Whether `key` in `map` is only known from a snapshot (never judged for clearance). */
  private isRestored(map: Map<string, KubeObject>, key: string): boolean {
    this.forgetUnlisted();
    return this.restored.get(map)?.has(key) ?? false;
  }

  get synced(): boolean {
    return this.informers.every((informer) => informer.synced);
  }

  /** The watches not synced yet or failing now, each with its latest error. */
  failing(): Array<{ name: string; error: string | undefined }> {
    return this.informers
      .filter((informer) => !informer.synced || informer.lastError !== undefined)
      .map((informer) => ({ name: informer.name, error: informer.lastError }));
  }

  async start(): Promise<void> {
    await Promise.all(this.informers.map((informer) => informer.start()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.informers.map((informer) => informer.stop()));
  }

  /** Nodes the graph knows (0 without a nodes watch): the storm cluster fallback's fleet (D430). */
  fleetSize = (): number => this.nodes.size;

  /** A ReplicaSet the graph holds, by uid: a pod bundle's owner chain reads it here, not by GET (D440). */
  replicaSet = (uid: string): KubeObject | undefined => {
    this.forgetUnlisted();
    return this.replicaSets.get(uid);
  };

  /** Blast-radius keys of the signal's object, nearest first. */
  ancestors = (signal: Signal): Ancestor[] => {
    this.forgetUnlisted();
    if (signal.kindOfObject === "Node") return [{ kind: "Node", namespace: "", name: signal.name }];
    const keys: Ancestor[] = [];
    const pod = signal.kindOfObject === "Pod" ? this.pods.get(signal.uid) : undefined;
    // D453: a pod the graph has not seen yet (its watch lags the events watch) is keyed by the
    // node its signal reports, so its storm does not depend on which watch arrived first; with a
    // nodes watch, only a node it holds (a scheduler's reportingInstance names no node).
    const nodeName = pod ? (pod.spec as { nodeName?: string } | undefined)?.nodeName : this.reportedNode(signal);
    if (nodeName) keys.push({ kind: "Node", namespace: "", name: nodeName });
    let owner = pod ? controllerOf(pod) : undefined;
    for (let depth = 0; owner?.kind && owner.name && depth < 4; depth++) {
      keys.push({ kind: owner.kind, namespace: signal.namespace, name: owner.name });
      const parent = owner.kind === "ReplicaSet" && owner.uid ? this.replicaSets.get(owner.uid) : undefined;
      owner = parent ? controllerOf(parent) : undefined;
    }
    if (signal.namespace) keys.push({ kind: "Namespace", namespace: "", name: signal.namespace });
    return keys;
  };

  /** The node an unseen pod's signal reports, unless the watched nodes say it is no node. */
  private reportedNode(signal: Signal): string | undefined {
    const name = signal.node;
    if (!name || !this.informers.some((informer) => informer.name === "nodes")) return name;
    return this.nodes.has(name) ? name : undefined;
  }

  /** Whether a pod or node incident's object has cleared (undefined: not judged here). */
  clearance = (uid: string, incident: DedupIncident): ClearanceObservation | undefined => {
    if (incident.kind_of_object === "Node") return this.nodeClearance(uid, incident.name);
    if (incident.kind_of_object !== "Pod") return undefined;
    if (this.isRestored(this.pods, uid)) return undefined;
    const pod = this.pods.get(uid);
    if (!pod) {
      const deletedAt = this.deletedPods.get(uid);
      return deletedAt === undefined
        ? undefined
        : { cleared: true, stableSince: deletedAt, resolution: "object_deleted" };
    }
    return readyClearance(pod);
  };

  /** A node by name: Ready (a same-name replacement counts), or gone with no replacement. */
  private nodeClearance(uid: string, name: string): ClearanceObservation | undefined {
    if (!this.informers.some((informer) => informer.name === "nodes")) return undefined;
    if (this.isRestored(this.nodes, name)) return undefined;
    const node = this.nodes.get(name);
    if (!node) {
      const deletedAt = this.deletedNodes.get(name);
      return deletedAt === undefined
        ? undefined
        : { cleared: true, stableSince: deletedAt, resolution: "object_deleted" };
    }
    const observed = readyClearance(node);
    // A replacement node (same name, new UID) that is Ready recovers the old one's incident.
    return observed.cleared && metadata(node).uid !== uid ? { ...observed, resolution: "recovered" } : observed;
  }
}

/** Ready=True since its transition. */
function readyClearance(object: KubeObject): ClearanceObservation {
  const conditions =
    (
      object.status as
        | { conditions?: Array<{ type?: string; status?: string; lastTransitionTime?: string }> }
        | undefined
    )?.conditions ?? [];
  const ready = conditions.find((condition) => condition.type === "Ready");
  if (ready?.status !== "True") return { cleared: false };
  const since = ready.lastTransitionTime ? Date.parse(ready.lastTransitionTime) : Number.NaN;
  return { cleared: true, ...(Number.isFinite(since) ? { stableSince: since } : {}), resolution: "recovered" };
}
