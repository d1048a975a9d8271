/**
 * Inject payloads, schema v1 (docs/watcher-pipeline.md#payloads; D19): field names and order kept
 * from the watcher spar replaces (docs/wire-compat.md#the-watchers-payload-v1), serialized with
 * JSON.stringify. The frozen-shape rule holds: cluster-event kinds never carry project, zone,
 * source, severity or fingerprint. Cluster text is masked here. Pure.
 */
import { rfc3339, goDuration } from "./go-time.ts";
import { maskText } from "./mask.ts";
import { CLUSTER_EVENT_KIND, type Severity, type Signal } from "./signal.ts";

export const MESSAGE_CAP_BYTES = 2048;
export const MESSAGE_TRUNCATION_MARK = "... [truncated by watcher]";

export interface PayloadContext {
  controller_ref?: string;
  node?: string;
  labels?: Record<string, string>;
}

/** The payload of a new incident (`cluster-event` and source-namespaced kinds). */
/** The object an incident is about (shared by every payload that names one). */
interface ObjectIdentity {
  reason: string;
  namespace: string;
  kind_of_object: string;
  name: string;
  container?: string;
  uid: string;
}

export interface IncidentPayload extends ObjectIdentity {
  kind: string;
  message: string;
  count: number;
  first_seen: string;
  last_seen: string;
  cluster: string;
  project?: string;
  zone?: string;
  source?: string;
  severity?: Severity;
  fingerprint?: string;
  context: PayloadContext;
  type: string;
  enrichment?: { bundle: string };
  forecast?: { eta: string; confidence_basis: string };
}

export interface Stamp {
  cluster: string;
  project?: string;
  zone?: string;
}

/** A message cut to `cap` bytes (default 2048) on a character boundary, marked when cut. */
export function capMessage(message: string, cap = MESSAGE_CAP_BYTES): string {
  const bytes = new TextEncoder().encode(message);
  if (bytes.length <= cap) return message;
  const cut = new TextDecoder().decode(bytes.slice(0, cap - MESSAGE_TRUNCATION_MARK.length)).replace(/\uFFFD$/, "");
  return `${cut}${MESSAGE_TRUNCATION_MARK}`;
}

export function buildContext(signal: Pick<Signal, "controllerRef" | "node" | "labels">): PayloadContext {
  const context: PayloadContext = {};
  if (signal.controllerRef) context.controller_ref = signal.controllerRef;
  if (signal.node) context.node = signal.node;
  const keys = Object.keys(signal.labels ?? {}).sort();
  if (keys.length > 0)
    context.labels = Object.fromEntries(keys.map((key) => [key, maskText(signal.labels?.[key] ?? "")]));
  return context;
}

/** The opening payload of an incident; `count` is the dedup-window count (1 when new). */
export function buildIncidentPayload(
  signal: Signal,
  stamp: Stamp,
  fingerprintValue: string,
  count: number,
  bundle?: string,
): IncidentPayload {
  const stamped: Pick<IncidentPayload, "project" | "zone" | "source" | "severity" | "fingerprint"> = {};
  if (signal.kind !== CLUSTER_EVENT_KIND && signal.kind !== `${CLUSTER_EVENT_KIND}-followup`) {
    if (stamp.project) stamped.project = stamp.project;
    if (stamp.zone) stamped.zone = stamp.zone;
    stamped.source = "sentinel";
    stamped.severity = signal.severity;
    stamped.fingerprint = fingerprintValue;
  }
  return {
    kind: signal.kind,
    reason: signal.reason,
    namespace: signal.namespace,
    kind_of_object: signal.kindOfObject,
    name: signal.name,
    ...(signal.container ? { container: signal.container } : {}),
    uid: signal.uid,
    message: capMessage(maskText(signal.message)),
    count,
    first_seen: rfc3339(signal.firstSeen),
    last_seen: rfc3339(signal.lastSeen),
    cluster: stamp.cluster,
    ...stamped,
    context: buildContext(signal),
    type: signal.type,
    ...(bundle ? { enrichment: { bundle } } : {}),
    ...(signal.forecast
      ? { forecast: { eta: rfc3339(signal.forecast.eta), confidence_basis: signal.forecast.confidenceBasis } }
      : {}),
  };
}

/** What an outcome record needs to know about the incident it closes. */
export interface IncidentIdentity {
  canonicalReason: string;
  namespace: string;
  kindOfObject: string;
  name: string;
  container?: string;
  uid: string;
  fingerprint: string;
  cluster: string;
  controllerRef?: string;
  node?: string;
  /** Epoch ms. */
  firstSeen: number;
}

export interface ResolvedPayload extends ObjectIdentity {
  kind: "resolved" | "resolved.reverted";
  fingerprint: string;
  cluster: string;
  first_seen: string;
  resolved_at: string;
  cleared_after: string;
  observed_stable_for: string;
  resolution: "recovered" | "object_deleted";
  reverted_after?: string;
  context: PayloadContext;
}

export interface OutcomeTiming {
  resolvedAt: number;
  stableSince: number;
  resolution: "recovered" | "object_deleted";
  /** Set on `resolved.reverted`: when the symptom came back. */
  revertedAt?: number;
}

export function buildResolvedPayload(
  kind: ResolvedPayload["kind"],
  incident: IncidentIdentity,
  timing: OutcomeTiming,
): ResolvedPayload {
  return {
    kind,
    reason: incident.canonicalReason,
    namespace: incident.namespace,
    kind_of_object: incident.kindOfObject,
    name: incident.name,
    ...(incident.container ? { container: incident.container } : {}),
    uid: incident.uid,
    fingerprint: incident.fingerprint,
    cluster: incident.cluster,
    first_seen: rfc3339(incident.firstSeen),
    resolved_at: rfc3339(timing.resolvedAt),
    cleared_after: goDuration(Math.max(0, timing.stableSince - incident.firstSeen)),
    observed_stable_for: goDuration(Math.max(0, timing.resolvedAt - timing.stableSince)),
    resolution: timing.resolution,
    ...(timing.revertedAt !== undefined
      ? { reverted_after: goDuration(Math.max(0, timing.revertedAt - timing.resolvedAt)) }
      : {}),
    context: buildContext(incident),
  };
}
