/**
 * The topology graph's snapshot codec (`--graph-snapshot-interval`, D425): what storm correlation
 * and recovery read of pods, replicasets and nodes (identity, node, controlling owner, the Ready
 * condition) plus the deletion tombstones, as compact JSON rows, and back to the minimal objects
 * the graph reads. Decoding checks every field and refuses the whole snapshot on the first bad
 * one (a corrupt snapshot restores nothing rather than a wrong topology). Pure.
 */

type KubeObject = Record<string, unknown>;

export const SNAPSHOT_VERSION = 1;

/** [uid, namespace, name, nodeName, ownerKind, ownerName, ownerUid, readyStatus, readySince] */
type PodRow = [string, string, string, string, string, string, string, string, string];
/** [uid, namespace, name, ownerKind, ownerName, ownerUid] */
type ReplicaSetRow = [string, string, string, string, string, string];
/** [name, uid, readyStatus, readySince] */
type NodeRow = [string, string, string, string];
/** [key, deletedAt] */
type TombstoneRow = [string, number];

export interface GraphContents {
  pods: KubeObject[];
  replicaSets: KubeObject[];
  nodes: KubeObject[];
  deletedPods: Array<[string, number]>;
  deletedNodes: Array<[string, number]>;
}

export interface GraphSnapshot extends GraphContents {
  at: number;
}

interface Wire {
  v: number;
  at: number;
  pods: PodRow[];
  replicaSets: ReplicaSetRow[];
  nodes: NodeRow[];
  deletedPods: TombstoneRow[];
  deletedNodes: TombstoneRow[];
}

interface Meta {
  uid?: string;
  name?: string;
  namespace?: string;
  ownerReferences?: Array<{ kind?: string; name?: string; uid?: string; controller?: boolean }>;
}

const meta = (object: KubeObject): Meta => (object.metadata ?? {}) as Meta;

function owner(object: KubeObject): [string, string, string] {
  const owners = meta(object).ownerReferences ?? [];
  const found = owners.find((candidate) => candidate.controller) ?? owners[0];
  return [found?.kind ?? "", found?.name ?? "", found?.uid ?? ""];
}

function ready(object: KubeObject): [string, string] {
  const conditions =
    (object.status as { conditions?: Array<{ type?: string; status?: string; lastTransitionTime?: string }> })
      ?.conditions ?? [];
  const condition = conditions.find((candidate) => candidate.type === "Ready");
  return [condition?.status ?? "", condition?.lastTransitionTime ?? ""];
}

export function encodeGraph(snapshot: GraphSnapshot): string {
  const wire: Wire = {
    v: SNAPSHOT_VERSION,
    at: snapshot.at,
    pods: snapshot.pods.map((pod) => {
      const m = meta(pod);
      const nodeName = (pod.spec as { nodeName?: string } | undefined)?.nodeName ?? "";
      return [m.uid ?? "", m.namespace ?? "", m.name ?? "", nodeName, ...owner(pod), ...ready(pod)];
    }),
    replicaSets: snapshot.replicaSets.map((set) => {
      const m = meta(set);
      return [m.uid ?? "", m.namespace ?? "", m.name ?? "", ...owner(set)];
    }),
    nodes: snapshot.nodes.map((node) => [meta(node).name ?? "", meta(node).uid ?? "", ...ready(node)]),
    deletedPods: snapshot.deletedPods,
    deletedNodes: snapshot.deletedNodes,
  };
  return JSON.stringify(wire);
}

function object(m: Meta, spec: KubeObject | undefined, readyAt: [string, string] | undefined): KubeObject {
  return {
    metadata: m,
    ...(spec ? { spec } : {}),
    ...(readyAt?.[0]
      ? {
          status: {
            conditions: [
              { type: "Ready", status: readyAt[0], ...(readyAt[1] ? { lastTransitionTime: readyAt[1] } : {}) },
            ],
          },
        }
      : {}),
  };
}

function withOwner(m: Meta, kind: string, name: string, uid: string): Meta {
  return kind && name ? { ...m, ownerReferences: [{ kind, name, ...(uid ? { uid } : {}), controller: true }] } : m;
}

class BadSnapshot extends Error {}

function strings<Row extends string[]>(row: unknown, length: Row["length"]): Row {
  if (!Array.isArray(row) || row.length !== length || !row.every((cell) => typeof cell === "string"))
    throw new BadSnapshot(`expected ${length} strings`);
  return row as Row;
}

function tombstones(rows: unknown): Array<[string, number]> {
  if (!Array.isArray(rows)) throw new BadSnapshot("tombstones are not a list");
  return rows.map((row) => {
    if (!Array.isArray(row) || typeof row[0] !== "string" || !Number.isFinite(row[1]))
      throw new BadSnapshot("bad tombstone");
    return [row[0], row[1] as number];
  });
}

function list(wire: Record<string, unknown>, field: string): unknown[] {
  const value = wire[field];
  if (!Array.isArray(value)) throw new BadSnapshot(`${field} is not a list`);
  return value;
}

/** The snapshot, or an error naming why it cannot be restored. */
export function decodeGraph(text: string): GraphSnapshot | { error: string } {
  try {
    const wire = JSON.parse(text) as Record<string, unknown>;
    if (wire?.v !== SNAPSHOT_VERSION) return { error: `unknown snapshot version ${String(wire?.v)}` };
    if (!Number.isFinite(wire.at)) return { error: "snapshot time missing" };
    return {
      at: wire.at as number,
      pods: list(wire, "pods").map((row) => {
        const [uid, namespace, name, nodeName, kind, ownerName, ownerUid, status, since] = strings<PodRow>(row, 9);
        const m = withOwner({ uid, namespace, name }, kind, ownerName, ownerUid);
        return object(m, nodeName ? { nodeName } : undefined, [status, since]);
      }),
      replicaSets: list(wire, "replicaSets").map((row) => {
        const [uid, namespace, name, kind, ownerName, ownerUid] = strings<ReplicaSetRow>(row, 6);
        return object(withOwner({ uid, namespace, name }, kind, ownerName, ownerUid), undefined, undefined);
      }),
      nodes: list(wire, "nodes").map((row) => {
        const [name, uid, status, since] = strings<NodeRow>(row, 4);
        return object({ name, uid }, undefined, [status, since]);
      }),
      deletedPods: tombstones(wire.deletedPods),
      deletedNodes: tombstones(wire.deletedNodes),
    };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}
