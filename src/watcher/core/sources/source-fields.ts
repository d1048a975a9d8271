/**
 * Reading the few fields the rollout, workload, autoscaling and degradation detectors need from
 * a Kubernetes object (metadata, owners, conditions, timestamps), and the one way they build a
 * source signal. Pure: plain objects in, plain values out; anything malformed reads as absent.
 */
import type { AccessCheck } from "../access-check.ts";
import type { Severity, Signal } from "../signal.ts";
import type { KubeObject } from "../source-spec.ts";

type Json = Record<string, unknown>;

function record(value: unknown): Json {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : {};
}

export function field(object: unknown, ...path: string[]): unknown {
  let at: unknown = object;
  for (const key of path) at = record(at)[key];
  return at;
}

export function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

export function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

export interface Meta {
  uid: string;
  name: string;
  namespace: string;
}

export function meta(object: KubeObject): Meta {
  const metadata = record(object.metadata);
  return { uid: text(metadata.uid), name: text(metadata.name), namespace: text(metadata.namespace) };
}

export function annotation(object: KubeObject, key: string): string | undefined {
  const value = record(field(object, "metadata", "annotations"))[key];
  return typeof value === "string" ? value : undefined;
}

export function label(object: KubeObject, key: string): string | undefined {
  const value = record(field(object, "metadata", "labels"))[key];
  return typeof value === "string" ? value : undefined;
}

export interface Owner {
  kind: string;
  name: string;
  uid: string;
}

/** The controlling owner (or the first owner when none is marked controller). */
export function controller(object: KubeObject): Owner | undefined {
  const owners = field(object, "metadata", "ownerReferences");
  if (!Array.isArray(owners)) return undefined;
  const chosen = owners.find((owner) => record(owner).controller === true) ?? owners[0];
  if (chosen === undefined) return undefined;
  const owner = record(chosen);
  return { kind: text(owner.kind), name: text(owner.name), uid: text(owner.uid) };
}

export interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  /** Epoch ms, undefined when absent or unreadable. */
  since: number | undefined;
}

export function condition(object: KubeObject, type: string): Condition | undefined {
  const conditions = field(object, "status", "conditions");
  if (!Array.isArray(conditions)) return undefined;
  const found = conditions.map(record).find((one) => one.type === type);
  if (!found) return undefined;
  return {
    type,
    status: text(found.status),
    reason: text(found.reason),
    message: text(found.message),
    since: time(found.lastTransitionTime),
  };
}

/** An RFC 3339 timestamp as epoch ms, undefined when absent or unreadable. */
export function time(value: unknown): number | undefined {
  if (typeof value !== "string" || value === "") return undefined;
  const parsed = Date.parse(value);
  return Number.isNaN(parsed) ? undefined : parsed;
}

export interface SignalInput {
  kind: string;
  reason: string;
  object: Meta;
  kindOfObject: string;
  severity: Severity;
  message: string;
  now: number;
  uid?: string;
  node?: string;
  controllerRef?: string;
  forecast?: Signal["forecast"];
}

/**
 * A forecast's basis as the payload names it: a linear fit over its window, in whole days, hours
 * or minutes when the window is one (`linear-7d-window`, `linear-3h-window`, `linear-90m-window`).
 */
export function forecastBasis(windowMs: number): string {
  const units: Array<[number, string]> = [
    [86_400_000, "d"],
    [3_600_000, "h"],
    [60_000, "m"],
    [1000, "s"],
  ];
  const [size, unit] = units.find(([ms]) => windowMs >= ms && windowMs % ms === 0) ?? [1, "ms"];
  return `linear-${windowMs / size}${unit}-window`;
}

/** A source signal: a synthetic one (type ""), counted once, seen at `now`. */
export function sourceSignal(input: SignalInput): Signal {
  return {
    kind: input.kind,
    reason: input.reason,
    namespace: input.object.namespace,
    kindOfObject: input.kindOfObject,
    name: input.object.name,
    uid: input.uid ?? input.object.uid,
    message: input.message,
    eventCount: 1,
    firstSeen: input.now,
    lastSeen: input.now,
    type: "",
    severity: input.severity,
    ...(input.node ? { node: input.node } : {}),
    ...(input.controllerRef ? { controllerRef: input.controllerRef } : {}),
    ...(input.forecast ? { forecast: input.forecast } : {}),
  };
}

/** The list and watch grants of one resource. */
export function listWatch(group: string, resource: string): AccessCheck[] {
  return [
    { verb: "list", group, resource },
    { verb: "watch", group, resource },
  ];
}
