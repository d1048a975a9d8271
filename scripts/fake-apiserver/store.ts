/**
 * The object store of the fake apiserver: objects per storage key, one global resourceVersion
 * counter (as etcd's revision), and a bounded change history that serves watches from a given
 * resourceVersion. Versions at or above the compaction point can be watched from; older ones are
 * gone (the caller answers 410). Dropping the oldest history entry moves the compaction point, so
 * a long-running fake behaves like a real watch cache window. It knows nothing about HTTP.
 */
import type { KubeObject } from "./selectors.ts";

export type ChangeType = "ADDED" | "MODIFIED" | "DELETED";

export interface Change {
  resourceVersion: number;
  type: ChangeType;
  storage: string;
  /** The object after the change; for DELETED, its last state stamped with the deletion's version. */
  object: KubeObject;
  /** The object before a MODIFIED or DELETED change (watch filters use it to turn leaves into DELETED). */
  previous: KubeObject | undefined;
}

export type StoreResult = { ok: true; object: KubeObject } | { ok: false; code: 404 | 409 | 422; message: string };

export interface StoreOptions {
  /** Changes kept for watch replay; older ones are compacted away. Default 10000. */
  historyLimit?: number;
  /** The resourceVersion of the empty store. Default 1. */
  initialResourceVersion?: number;
}

function metadataOf(object: KubeObject): Record<string, unknown> {
  return (object.metadata ?? {}) as Record<string, unknown>;
}

function objectKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

function randomSuffix(): string {
  return Math.random().toString(36).slice(2, 7).padEnd(5, "x");
}

/** RFC 3339 seconds, the way the apiserver writes `metav1.Time`. */
export function kubeTime(date: Date = new Date()): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}

export class ObjectStore {
  private revision: number;
  private compactedAt: number;
  private readonly historyLimit: number;
  private readonly objects = new Map<string, Map<string, KubeObject>>();
  private history: Change[] = [];
  private readonly listeners = new Set<(change: Change) => void>();

  constructor(options: StoreOptions = {}) {
    this.revision = options.initialResourceVersion ?? 1;
    this.compactedAt = this.revision;
    this.historyLimit = options.historyLimit ?? 10_000;
  }

  /** The newest resourceVersion (what a list reports). */
  get resourceVersion(): number {
    return this.revision;
  }

  /** Watches may start from this version or newer; older versions are expired. */
  get compactedResourceVersion(): number {
    return this.compactedAt;
  }

  subscribe(listener: (change: Change) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get(storage: string, namespace: string, name: string): KubeObject | undefined {
    return this.objects.get(storage)?.get(objectKey(namespace, name));
  }

  /** Objects of one storage key, in one namespace or all (`undefined`), sorted by namespace then name. */
  list(storage: string, namespace: string | undefined): KubeObject[] {
    const all = [...(this.objects.get(storage)?.entries() ?? [])];
    const prefix = namespace === undefined ? undefined : `${namespace}/`;
    return all
      .filter(([key]) => prefix === undefined || key.startsWith(prefix))
      .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0))
      .map(([, object]) => object);
  }

  create(storage: string, input: KubeObject): StoreResult {
    const object = structuredClone(input);
    const metadata = { ...metadataOf(object) };
    if (!metadata.name && typeof metadata.generateName === "string")
      metadata.name = `${metadata.generateName}${randomSuffix()}`;
    const name = typeof metadata.name === "string" ? metadata.name : "";
    if (name === "")
      return { ok: false, code: 422, message: "metadata.name: Required value: name or generateName is required" };
    const namespace = typeof metadata.namespace === "string" ? metadata.namespace : "";
    if (this.get(storage, namespace, name))
      return { ok: false, code: 409, message: `${storage.split(".")[0]} "${name}" already exists` };
    metadata.uid ??= crypto.randomUUID();
    metadata.creationTimestamp ??= kubeTime();
    object.metadata = metadata;
    return { ok: true, object: this.commit("ADDED", storage, namespace, name, object, undefined) };
  }

  /** Replace an existing object. A `metadata.resourceVersion` in the input must match (optimistic concurrency). */
  update(storage: string, input: KubeObject): StoreResult {
    const object = structuredClone(input);
    const metadata = { ...metadataOf(object) };
    const name = String(metadata.name ?? "");
    const namespace = String(metadata.namespace ?? "");
    const previous = this.get(storage, namespace, name);
    if (!previous) return { ok: false, code: 404, message: `${storage.split(".")[0]} "${name}" not found` };
    const previousMetadata = metadataOf(previous);
    if (metadata.resourceVersion !== undefined && metadata.resourceVersion !== previousMetadata.resourceVersion) {
      return {
        ok: false,
        code: 409,
        message: `Operation cannot be fulfilled on ${storage} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      };
    }
    metadata.uid = previousMetadata.uid;
    metadata.creationTimestamp = previousMetadata.creationTimestamp;
    object.metadata = metadata;
    return { ok: true, object: this.commit("MODIFIED", storage, namespace, name, object, previous) };
  }

  delete(storage: string, namespace: string, name: string): StoreResult {
    const previous = this.get(storage, namespace, name);
    if (!previous) return { ok: false, code: 404, message: `${storage.split(".")[0]} "${name}" not found` };
    const object = { ...previous, metadata: { ...metadataOf(previous) } };
    return { ok: true, object: this.commit("DELETED", storage, namespace, name, object, previous) };
  }

  /**
   * The objects of one storage key as they were at `resourceVersion` (sorted like `list`), rebuilt by
   * undoing the newer history; `undefined` when that version is compacted or newer than now.
   */
  listAt(storage: string, namespace: string | undefined, resourceVersion: number): KubeObject[] | undefined {
    if (resourceVersion < this.compactedAt || resourceVersion > this.revision) return undefined;
    const current = this.list(storage, namespace);
    if (resourceVersion === this.revision) return current;
    const state = new Map<string, KubeObject>();
    for (const object of current)
      state.set(objectKey(String(object.metadata?.namespace ?? ""), String(object.metadata?.name ?? "")), object);
    const newer = this.history
      .slice(this.firstIndexAfter(resourceVersion))
      .filter((change) => change.storage === storage);
    for (const change of newer.reverse()) {
      const key = objectKey(
        String(change.object.metadata?.namespace ?? ""),
        String(change.object.metadata?.name ?? ""),
      );
      if (change.type === "ADDED") state.delete(key);
      else if (change.previous) state.set(key, change.previous);
    }
    const prefix = namespace === undefined ? undefined : `${namespace}/`;
    return [...state.entries()]
      .filter(([key]) => prefix === undefined || key.startsWith(prefix))
      .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0))
      .map(([, object]) => object);
  }

  /**
   * Changes to one storage key after `resourceVersion`, oldest first; `undefined` when that version
   * is older than the compaction point (the client must re-list).
   */
  changesSince(storage: string, resourceVersion: number): Change[] | undefined {
    if (resourceVersion < this.compactedAt) return undefined;
    const start = this.firstIndexAfter(resourceVersion);
    return this.history.slice(start).filter((change) => change.storage === storage);
  }

  /** Forget all history: every version before now is expired (etcd compaction). */
  compact(): void {
    this.history = [];
    this.compactedAt = this.revision;
  }

  /** Drop every object and compact; the version counter keeps counting (as after an etcd restore). */
  clear(): void {
    this.objects.clear();
    this.revision++;
    this.compact();
  }

  private firstIndexAfter(resourceVersion: number): number {
    let low = 0;
    let high = this.history.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if ((this.history[middle]?.resourceVersion ?? 0) <= resourceVersion) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  private commit(
    type: ChangeType,
    storage: string,
    namespace: string,
    name: string,
    object: KubeObject,
    previous: KubeObject | undefined,
  ): KubeObject {
    this.revision++;
    (object.metadata as Record<string, unknown>).resourceVersion = String(this.revision);
    let bucket = this.objects.get(storage);
    if (!bucket) {
      bucket = new Map();
      this.objects.set(storage, bucket);
    }
    if (type === "DELETED") bucket.delete(objectKey(namespace, name));
    else bucket.set(objectKey(namespace, name), object);
    const change: Change = { resourceVersion: this.revision, type, storage, object, previous };
    this.history.push(change);
    if (this.history.length > this.historyLimit) {
      const dropped = this.history.splice(0, this.history.length - this.historyLimit);
      this.compactedAt = dropped[dropped.length - 1]?.resourceVersion ?? this.compactedAt;
    }
    for (const listener of this.listeners) listener(change);
    return object;
  }
}
