/**
 * The storm keys that do not come from the topology graph (docs/watcher-pipeline.md#storms): the
 * external `registry-host` key of a retryable image pull (D429), the mined keys behind
 * --storm-mine, and the cluster fallback that groups lone node failures (D430). Pure.
 */
import { type PullClass, imageReference, registryHost } from "./pull-class.ts";
import type { Signal } from "./signal.ts";
import type { Ancestor, FallbackKey } from "./storm.ts";

/**
 * D429: a pull failing for a retryable cause (429, 5xx, timeouts) is the registry's fault, not the
 * pod's: its key is the registry host of the quoted image, tried before every topology key, so
 * pods of many owners on many nodes pulling from one sick registry form one storm.
 */
export function externalKeys(signal: Pick<Signal, "message">, pullClass: PullClass): Ancestor[] {
  if (pullClass !== "retryable") return [];
  const image = imageReference(signal.message);
  if (!image) return [];
  return [{ kind: "Registry", namespace: "", name: registryHost(image), source: "registry-host" }];
}

/** Mined keys (--storm-mine): the image in the message, the reporting node, the container path. */
export function minedKeys(signal: Pick<Signal, "message" | "node" | "container">): Ancestor[] {
  const keys: Ancestor[] = [];
  const image = imageReference(signal.message);
  if (image) keys.push({ kind: "Image", namespace: "", name: image, source: "mined:image" });
  if (signal.node) keys.push({ kind: "Node", namespace: "", name: signal.node, source: "mined:node" });
  if (signal.container)
    keys.push({ kind: "Container", namespace: "", name: signal.container, source: "mined:container" });
  return keys;
}

/** The fallback forms when this many nodes fail within 20 s. */
export const FALLBACK_WINDOW_MS = 20_000;
/** A fallback storm closes after 5 idle minutes (not 30). */
export const FALLBACK_IDLE_CLOSE_MS = 5 * 60_000;

/** max(--storm-min, 3, a fifth of the nodes the graph knows, rounded up). */
export function fallbackThreshold(stormMin: number, fleetSize: number): number {
  return Math.max(stormMin, 3, Math.ceil(0.2 * fleetSize));
}

/**
 * D430 (--storm-cluster-fallback): a Node incident whose only candidate key is the node itself
 * (no zone key is ever offered, so every such node qualifies) also carries the synthetic
 * `Cluster/<cluster name>` key (`unnamed` without one), tried last.
 */
export function fallbackKey(
  signal: Pick<Signal, "kindOfObject" | "name">,
  declared: readonly Ancestor[],
  cluster: string,
  stormMin: number,
  fleetSize: number,
): FallbackKey | undefined {
  if (signal.kindOfObject !== "Node") return undefined;
  const [only, ...rest] = declared;
  if (rest.length > 0 || (only && (only.kind !== "Node" || only.name !== signal.name))) return undefined;
  return {
    ancestor: { kind: "Cluster", namespace: "", name: cluster || "unnamed", source: "simultaneity" },
    threshold: fallbackThreshold(stormMin, fleetSize),
    windowMs: FALLBACK_WINDOW_MS,
    idleCloseMs: FALLBACK_IDLE_CLOSE_MS,
  };
}
