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
 * whichever source raised it.
 */
import type { Logger } from "../../telemetry/logger.ts";
import type { DedupIncident } from "../core/dedup-cache.ts";
import type { ClearanceObservation } from "../core/recovery.ts";
import type { Signal } from "../core/signal.ts";
import type { Ancestor } from "../core/storm.ts";
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

export class ClusterGraph {
  private readonly pods = new Map<string, KubeObject>();
  private readonly deletedPods = new Map<string, number>();
  private readonly replicaSets = new Map<string, KubeObject>();
  /** Nodes by name (a replacement keeps the name, not the UID), and deleted ones by name. */
  private readonly nodes = new Map<string, KubeObject>();
  private readonly deletedNodes = new Map<string, number>();
  private readonly informers: RestartingInformer[];

  constructor(
    connection: KubeConnection,
    logger: Logger,
    onRestart: () => void,
    watches: { pods: boolean; replicaSets: boolean; nodes?: boolean } = { pods: true, replicaSets: true },
  ) {
    const keep = (map: Map<string, KubeObject>) => ({
      add: (object: KubeObject) => map.set(metadata(object).uid ?? "", object),
      update: (object: KubeObject) => map.set(metadata(object).uid ?? "", object),
      remove: (object: KubeObject) => {
        const uid = metadata(object).uid ?? "";
        map.delete(uid);
        if (map === this.pods) this.deletedPods.set(uid, Date.now());
      },
    });
    const nodes = {
      add: (object: KubeObject) => {
        const name = metadata(object).name ?? "";
        this.nodes.set(name, object);
        this.deletedNodes.delete(name);
      },
      update: (object: KubeObject) => this.nodes.set(metadata(object).name ?? "", object),
      remove: (object: KubeObject) => {
        const name = metadata(object).name ?? "";
        this.nodes.delete(name);
        this.deletedNodes.set(name, Date.now());
      },
    };
    this.informers = [
      ...(watches.nodes
        ? [new RestartingInformer("nodes", connection, "/api/v1/nodes", nodes, logger, onRestart)]
        : []),
      ...(watches.pods
        ? [new RestartingInformer("pods", connection, "/api/v1/pods", keep(this.pods), logger, onRestart)]
        : []),
      ...(watches.replicaSets
        ? [
            new RestartingInformer(
              "replicasets",
              connection,
              "/apis/apps/v1/replicasets",
              keep(this.replicaSets),
              logger,
              onRestart,
            ),
          ]
        : []),
    ];
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

  /** Blast-radius keys of the signal's object, nearest first. */
  ancestors = (signal: Signal): Ancestor[] => {
    if (signal.kindOfObject === "Node") return [{ kind: "Node", namespace: "", name: signal.name }];
    const keys: Ancestor[] = [];
    const pod = signal.kindOfObject === "Pod" ? this.pods.get(signal.uid) : undefined;
    const nodeName = (pod?.spec as { nodeName?: string } | undefined)?.nodeName;
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

  /** Whether a pod or node incident's object has cleared (undefined: not judged here). */
  clearance = (uid: string, incident: DedupIncident): ClearanceObservation | undefined => {
    if (incident.kind_of_object === "Node") return this.nodeClearance(uid, incident.name);
    if (incident.kind_of_object !== "Pod") return undefined;
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
