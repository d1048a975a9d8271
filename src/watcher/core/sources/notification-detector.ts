/**
 * The `notifications` source's judgement (docs/watcher.md#notifications, D400-D401): a received
 * CloudEvent mapped to a signal by the suffix of its type, whatever the provider:
 * `…UpgradeEvent` (or `…upgrade`) is `notification.upgrade` [info], `…UpgradeAvailableEvent`
 * (`…upgrade_available`) `notification.upgrade_available` [info], `…SecurityBulletinEvent`
 * (`…security_bulletin`) `notification.security_bulletin` [warning]. GKE's cluster notifications
 * (`type.googleapis.com/google.container.v1beta1.*`) match as they are, and also when they arrive
 * wrapped as a Pub/Sub message CloudEvent (`google.cloud.pubsub.topic.v1.messagePublished`: the
 * type is the message's `type_url` attribute, the payload its `payload` attribute). Another type
 * is ignored (the receiver acknowledges it, so a push subscription does not retry it forever). A
 * redelivered CloudEvent (the same `id` and `source`) is emitted once: ids are remembered 24h,
 * at most 10,000. Pure: time only from `now`.
 */
import type { Severity, Signal } from "../signal.ts";
import type { Detector, SourceSpec } from "../source-spec.ts";
import { field, text } from "./source-fields.ts";

/** The attributes of a received CloudEvent the mapping reads (the SDK's event, as plain data). */
export interface ReceivedCloudEvent {
  id: string;
  source: string;
  type: string;
  subject?: string;
  data?: unknown;
}

export type Reception =
  | { outcome: "emitted"; signal: Signal }
  | { outcome: "duplicate" }
  | { outcome: "ignored"; reason: string };

export const PUBSUB_MESSAGE_TYPE = "google.cloud.pubsub.topic.v1.messagePublished";
const REMEMBER_MS = 24 * 3600_000;
const REMEMBER_MAX = 10_000;
const MESSAGE_MAX = 2048;

const KINDS: Readonly<Record<string, { reason: string; severity: Severity }>> = {
  upgrade: { reason: "upgrade", severity: "info" },
  upgradeavailable: { reason: "upgrade_available", severity: "info" },
  securitybulletin: { reason: "security_bulletin", severity: "warning" },
};

/** A type's last segment, lower-case letters and digits only, without a trailing `event`. */
export function typeSuffix(type: string): string {
  const last = type.split(/[./]/).at(-1) ?? "";
  return last
    .toLowerCase()
    .replace(/[^a-z0-9]/g, "")
    .replace(/event$/, "");
}

function object(value: unknown): Record<string, unknown> {
  if (typeof value === "string") {
    try {
      return object(JSON.parse(value));
    } catch {
      return {};
    }
  }
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** The event's effective type, its payload and the cluster it names (a Pub/Sub message unwrapped). */
function unwrap(event: ReceivedCloudEvent): { type: string; payload: Record<string, unknown>; cluster: string } {
  if (event.type !== PUBSUB_MESSAGE_TYPE) {
    const payload = object(event.data);
    return { type: event.type, payload, cluster: event.subject || text(payload.resource) || event.source };
  }
  const attributes = object(field(event.data, "message", "attributes"));
  const payload = object(attributes.payload);
  const cluster = text(attributes.cluster_name) || text(payload.resource) || event.subject || event.source;
  return { type: text(attributes.type_url), payload, cluster };
}

function list(value: unknown): string {
  return Array.isArray(value) ? value.map(String).join(", ") : text(value);
}

function describe(reason: string, payload: Record<string, unknown>, cluster: string): string {
  const p = (key: string) => text(payload[key]);
  const resource = [p("resourceType"), p("resource")].filter(Boolean).join(" ") || cluster;
  if (reason === "upgrade")
    return `cluster ${cluster}: upgrade of ${resource}${p("currentVersion") ? ` from ${p("currentVersion")}` : ""}${p("targetVersion") ? ` to ${p("targetVersion")}` : ""}${p("operationStartTime") ? ` started ${p("operationStartTime")}` : ""}`;
  if (reason === "upgrade_available")
    return `cluster ${cluster}: upgrade available for ${resource}${p("version") ? `: ${p("version")}` : ""}${text(field(payload, "releaseChannel", "channel")) ? ` (channel ${text(field(payload, "releaseChannel", "channel"))})` : ""}`;
  const parts = [
    `cluster ${cluster}: security bulletin ${p("bulletinId") || "(no id)"}${p("severity") ? ` (${p("severity")})` : ""}`,
    p("resourceTypeAffected") ? `affects ${p("resourceTypeAffected")}` : "",
    p("briefDescription"),
    list(payload.cveIds) ? `CVEs ${list(payload.cveIds)}` : "",
    p("suggestedUpgradeTarget") ? `suggested upgrade ${p("suggestedUpgradeTarget")}` : "",
    payload.manualStepsRequired === true ? "manual steps required" : "",
    p("bulletinUri"),
  ];
  return parts.filter(Boolean).join("; ");
}

/** What the notification is about, for the uid: the bulletin, or the version it moves to (D401). */
function topic(reason: string, payload: Record<string, unknown>): string {
  const key = reason === "security_bulletin" ? "bulletinId" : reason === "upgrade" ? "targetVersion" : "version";
  return text(payload[key]);
}

export class NotificationDetector implements Detector {
  /** `source` NUL `id` → when first received, oldest first. */
  readonly #seen = new Map<string, number>();

  /** Ids remembered for redelivery (bounded). */
  get remembered(): number {
    return this.#seen.size;
  }

  /** No watches: events come through `receive`. */
  observe(): Signal[] {
    return [];
  }

  receive(event: ReceivedCloudEvent, now: number): Reception {
    this.#forget(now);
    const unwrapped = unwrap(event);
    const kind = KINDS[typeSuffix(unwrapped.type)];
    if (!kind)
      return {
        outcome: "ignored",
        reason: `no notification kind for CloudEvent type ${JSON.stringify(unwrapped.type)}`,
      };
    const key = `${event.source}\u0000${event.id}`;
    if (this.#seen.has(key)) return { outcome: "duplicate" };
    this.#seen.set(key, now);
    if (this.#seen.size > REMEMBER_MAX) this.#seen.delete(this.#seen.keys().next().value as string);
    const about = topic(kind.reason, unwrapped.payload);
    const message = describe(kind.reason, unwrapped.payload, unwrapped.cluster);
    return {
      outcome: "emitted",
      signal: {
        kind: `notification.${kind.reason}`,
        reason: kind.reason,
        namespace: "",
        kindOfObject: "Cluster",
        name: unwrapped.cluster,
        uid: about ? `notification:${unwrapped.cluster}/${about}` : `notification:${event.source}/${event.id}`,
        message: message.length > MESSAGE_MAX ? `${message.slice(0, MESSAGE_MAX)}…` : message,
        eventCount: 1,
        firstSeen: now,
        lastSeen: now,
        type: "",
        severity: kind.severity,
      },
    };
  }

  #forget(now: number): void {
    for (const [key, at] of this.#seen) {
      if (now - at < REMEMBER_MS) break;
      this.#seen.delete(key);
    }
  }
}

/** No grants, no watches: a receiver the runner listens for (source-registry.ts SOURCE_RUNNERS). */
export const NOTIFICATIONS_SPEC: SourceSpec<Record<string, never>> = {
  name: "notifications",
  reasons: ["upgrade", "upgrade_available", "security_bulletin"],
  scope: "project",
  required: [],
  watches: [],
  detector: () => new NotificationDetector(),
};
