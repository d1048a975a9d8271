/**
 * The notifications mapping (D400-D401): a CloudEvent's type suffix picks the kind (GKE's
 * `type.googleapis.com/google.container.v1beta1.*Event` types, the snake-case forms, and GKE's
 * notifications wrapped in a Pub/Sub message CloudEvent); upgrades are info, bulletins warning;
 * another type is ignored naming it; a redelivery (same id and source) is emitted once, and the
 * remembered ids expire after 24h.
 */
import { describe, expect, test } from "bun:test";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { receiverSettings } from "../../../src/watcher/sources/notifications-receiver.ts";
import {
  NotificationDetector,
  PUBSUB_MESSAGE_TYPE,
  type ReceivedCloudEvent,
  typeSuffix,
} from "../../../src/watcher/core/sources/notification-detector.ts";

const T0 = Date.parse("2026-11-01T00:00:00Z");
const GKE = "type.googleapis.com/google.container.v1beta1";
const SOURCE = "//container.googleapis.com/projects/p1/locations/us-east1/clusters/prod";

function event(type: string, data: unknown, id = "m-1"): ReceivedCloudEvent {
  return { id, source: SOURCE, type, subject: "prod", data };
}

function emitted(detector: NotificationDetector, received: ReceivedCloudEvent, now = T0) {
  const reception = detector.receive(received, now);
  if (reception.outcome !== "emitted") throw new Error(`not emitted: ${JSON.stringify(reception)}`);
  return reception.signal;
}

test("type suffixes: the last segment, case and separators ignored, without Event", () => {
  expect(typeSuffix(`${GKE}.UpgradeAvailableEvent`)).toBe("upgradeavailable");
  expect(typeSuffix("com.example.cluster.upgrade_available")).toBe("upgradeavailable");
  expect(typeSuffix("com.example/security-bulletin")).toBe("securitybulletin");
  expect(typeSuffix("UpgradeEvent")).toBe("upgrade");
});

describe("GKE's cluster notifications", () => {
  test("UpgradeEvent is notification.upgrade [info], keyed by the cluster and target version", () => {
    const signal = emitted(
      new NotificationDetector(),
      event(`${GKE}.UpgradeEvent`, {
        resourceType: "MASTER",
        operation: "operation-1",
        operationStartTime: "2026-11-01T00:00:00Z",
        currentVersion: "1.30.1-gke.1",
        targetVersion: "1.30.2-gke.3",
        resource: "projects/p1/locations/us-east1/clusters/prod",
      }),
    );
    expect(signal).toMatchObject({
      kind: "notification.upgrade",
      reason: "upgrade",
      severity: "info",
      namespace: "",
      kindOfObject: "Cluster",
      name: "prod",
      uid: "notification:prod/1.30.2-gke.3",
      type: "",
      eventCount: 1,
      firstSeen: T0,
      lastSeen: T0,
    });
    expect(signal.message).toBe(
      "cluster prod: upgrade of MASTER projects/p1/locations/us-east1/clusters/prod from 1.30.1-gke.1 to 1.30.2-gke.3 started 2026-11-01T00:00:00Z",
    );
  });

  test("UpgradeAvailableEvent is notification.upgrade_available [info]", () => {
    const signal = emitted(
      new NotificationDetector(),
      event(`${GKE}.UpgradeAvailableEvent`, {
        version: "1.31.0-gke.100",
        resourceType: "NODE_POOL",
        releaseChannel: { channel: "REGULAR" },
      }),
    );
    expect(signal).toMatchObject({
      kind: "notification.upgrade_available",
      reason: "upgrade_available",
      severity: "info",
      uid: "notification:prod/1.31.0-gke.100",
    });
    expect(signal.message).toBe("cluster prod: upgrade available for NODE_POOL: 1.31.0-gke.100 (channel REGULAR)");
  });

  test("SecurityBulletinEvent is notification.security_bulletin [warning], keyed by the bulletin", () => {
    const signal = emitted(
      new NotificationDetector(),
      event(`${GKE}.SecurityBulletinEvent`, {
        resourceTypeAffected: "RESOURCE_TYPE_CONTROLPLANE",
        bulletinId: "GCP-2026-042",
        cveIds: ["CVE-2026-0001", "CVE-2026-0002"],
        severity: "High",
        bulletinUri: "https://cloud.example/bulletins#gcp-2026-042",
        briefDescription: "A container escape in runc.",
        suggestedUpgradeTarget: "1.30.3-gke.1",
        manualStepsRequired: true,
      }),
    );
    expect(signal).toMatchObject({
      kind: "notification.security_bulletin",
      reason: "security_bulletin",
      severity: "warning",
      uid: "notification:prod/GCP-2026-042",
    });
    expect(signal.message).toBe(
      "cluster prod: security bulletin GCP-2026-042 (High); affects RESOURCE_TYPE_CONTROLPLANE; A container escape in runc.; CVEs CVE-2026-0001, CVE-2026-0002; suggested upgrade 1.30.3-gke.1; manual steps required; https://cloud.example/bulletins#gcp-2026-042",
    );
  });

  test("wrapped in a Pub/Sub message CloudEvent: the type_url attribute and the payload attribute", () => {
    const signal = emitted(new NotificationDetector(), {
      id: "pubsub-7",
      source: "//pubsub.googleapis.com/projects/p1/topics/gke-notes",
      type: PUBSUB_MESSAGE_TYPE,
      data: {
        subscription: "projects/p1/subscriptions/gke-notes-push",
        message: {
          data: btoa("Security bulletin GCP-2026-042"),
          messageId: "7",
          attributes: {
            cluster_name: "prod",
            cluster_location: "us-east1",
            project_id: "p1",
            type_url: `${GKE}.SecurityBulletinEvent`,
            payload: JSON.stringify({ bulletinId: "GCP-2026-042", severity: "High" }),
          },
        },
      },
    });
    expect(signal).toMatchObject({
      kind: "notification.security_bulletin",
      name: "prod",
      uid: "notification:prod/GCP-2026-042",
      severity: "warning",
    });
  });
});

test("any provider: the snake-case suffix maps the same; data as a JSON string is read", () => {
  const signal = emitted(new NotificationDetector(), {
    id: "e1",
    source: "urn:acme:fleet",
    type: "com.acme.cluster.upgrade_available",
    data: '{"version":"2.0"}',
  });
  expect(signal).toMatchObject({ kind: "notification.upgrade_available", name: "urn:acme:fleet" });
  expect(signal.message).toContain(": 2.0");
});

test("an unknown type is ignored naming it, and not remembered", () => {
  const detector = new NotificationDetector();
  expect(detector.receive(event("com.example.object.created", {}), T0)).toEqual({
    outcome: "ignored",
    reason: 'no notification kind for CloudEvent type "com.example.object.created"',
  });
  expect(detector.receive(event(PUBSUB_MESSAGE_TYPE, { message: { attributes: {} } }), T0)).toMatchObject({
    outcome: "ignored",
  });
  expect(detector.remembered).toBe(0);
});

test("a redelivery (same id and source) is emitted once; another id or source is new; ids expire after 24h", () => {
  const detector = new NotificationDetector();
  const upgrade = event(`${GKE}.UpgradeEvent`, { targetVersion: "1.31" }, "m-9");
  expect(detector.receive(upgrade, T0).outcome).toBe("emitted");
  expect(detector.receive(upgrade, T0 + 1000)).toEqual({ outcome: "duplicate" });
  expect(detector.receive({ ...upgrade, id: "m-10" }, T0 + 2000).outcome).toBe("emitted");
  expect(detector.receive({ ...upgrade, source: "//elsewhere" }, T0 + 3000).outcome).toBe("emitted");
  expect(detector.remembered).toBe(3);
  // 24h after the first copy it is forgotten (the later two are not yet); then all but the newest.
  expect(detector.receive(upgrade, T0 + 24 * 3600_000).outcome).toBe("emitted");
  expect(detector.remembered).toBe(3);
  expect(detector.receive({ ...upgrade, id: "m-11" }, T0 + 24 * 3600_000 + 3000).outcome).toBe("emitted");
  expect(detector.remembered).toBe(2);
});

test("remembered ids are bounded: past 10,000 the oldest is forgotten", () => {
  const detector = new NotificationDetector();
  for (let i = 0; i <= 10_000; i++) detector.receive(event(`${GKE}.UpgradeEvent`, {}, `id-${i}`), T0);
  expect(detector.remembered).toBe(10_000);
  expect(detector.receive(event(`${GKE}.UpgradeEvent`, {}, "id-0"), T0).outcome).toBe("emitted");
  expect(detector.receive(event(`${GKE}.UpgradeEvent`, {}, "id-10000"), T0).outcome).toBe("duplicate");
});

describe("the receiver's defaults, as users get them", () => {
  test("with --notifications-addr absent it listens on :8090; the subscription's last segment is the route", () => {
    const parsed = watcherConfigFromArgv([
      "--dry-run",
      "--sources=cluster-events,notifications",
      "--notifications-subscription=projects/p1/subscriptions/gke-notes",
      "--notifications-token-env=NOTES_TOKEN",
    ]);
    if (!parsed.ok) throw new Error(parsed.error);
    const settings = receiverSettings({
      values: parsed.value.values,
      env: { NOTES_TOKEN: "s3cret" },
      connection: { server: "http://127.0.0.1:1", tls: {}, token: () => undefined },
      without: new Set(),
      emit: () => {},
      logger: createLogger("error"),
      onRestart: () => {},
    });
    expect(settings).toEqual({ subscription: "gke-notes", address: ":8090", token: "s3cret" });
  });
});
