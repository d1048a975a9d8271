/**
 * A core/v1 Event (as the API server sends it, untrusted) to a Signal: identity from
 * involvedObject, times from firstTimestamp → eventTime → creationTimestamp (and lastTimestamp for
 * last_seen), the node from source.host or reportingInstance, the event's own labels. Returns
 * undefined for an object that is not a usable event. Pure.
 */
import { CLUSTER_EVENT_KIND, type Signal } from "./signal.ts";

type Json = Record<string, unknown>;

const record = (value: unknown): Json =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : {};
const text = (value: unknown): string => (typeof value === "string" ? value : "");

function time(...candidates: unknown[]): number | undefined {
  for (const candidate of candidates) {
    if (typeof candidate === "string" && candidate !== "") {
      const parsed = Date.parse(candidate);
      if (Number.isFinite(parsed)) return parsed;
    }
    if (candidate instanceof Date && Number.isFinite(candidate.getTime())) return candidate.getTime();
  }
  return undefined;
}

function labels(value: unknown): Record<string, string> | undefined {
  const entries = Object.entries(record(value)).filter(
    (entry): entry is [string, string] => typeof entry[1] === "string",
  );
  return entries.length > 0 ? Object.fromEntries(entries) : undefined;
}

export function eventToSignal(event: unknown): Signal | undefined {
  const root = record(event);
  const metadata = record(root.metadata);
  const involved = record(root.involvedObject);
  const series = record(root.series);
  const uid = text(involved.uid);
  const reason = text(root.reason);
  if (uid === "" || reason === "") return undefined;
  const created = metadata.creationTimestamp;
  const firstSeen = time(root.firstTimestamp, root.eventTime, created) ?? 0;
  const lastSeen = time(root.lastTimestamp, series.lastObservedTime, root.eventTime, created) ?? firstSeen;
  const count = typeof root.count === "number" ? root.count : typeof series.count === "number" ? series.count : 1;
  const node = text(record(root.source).host) || text(root.reportingInstance);
  const container = text(involved.fieldPath);
  const eventLabels = labels(metadata.labels);
  return {
    kind: CLUSTER_EVENT_KIND,
    reason,
    namespace: text(involved.namespace),
    kindOfObject: text(involved.kind),
    name: text(involved.name),
    ...(container ? { container } : {}),
    uid,
    message: text(root.message),
    eventCount: Math.max(1, Math.trunc(count)),
    firstSeen,
    lastSeen,
    type: text(root.type),
    severity: "critical",
    ...(node ? { node } : {}),
    ...(eventLabels ? { labels: eventLabels } : {}),
  };
}
