/**
 * Frozen wire facts: the fingerprint vectors of the reference, Go time and duration text, the
 * schema-v1 payload field order and the frozen-shape rule, masking.
 */
import { describe, expect, test } from "bun:test";
import { sha256Hex } from "../../../src/surfaces/http/caller-auth.ts";
import { fingerprint } from "../../../src/watcher/core/fingerprint.ts";
import { goDuration, rfc3339 } from "../../../src/watcher/core/go-time.ts";
import { maskText } from "../../../src/watcher/core/mask.ts";
import { forecastBasis } from "../../../src/watcher/core/sources/source-fields.ts";
import { buildIncidentPayload, buildResolvedPayload } from "../../../src/watcher/core/payload.ts";
import type { Signal } from "../../../src/watcher/core/signal.ts";

describe("fingerprint", () => {
  const vectors: Array<[string, string, string, string, string]> = [
    [
      "k8s-event",
      "CrashLoopBackOff",
      "Pod",
      "us-east1-b",
      "82fbc19ad7e86147ed4e0cb80bcab970bc75195e8db75df9d3bec4f66fe2153d",
    ],
    ["k8s-event", "CrashLoopBackOff", "Pod", "", "e2957792a0b3ad9e29db2051dbc69ff01dfe3a52da8dbb6d1331aa44fe946f8b"],
    [
      "k8s-event",
      "ImagePullBackOff",
      "Pod",
      "us-east1-b",
      "0a3458d04f73d63991f71bf30c0fcb00d79c6db571d7a3f76031b309d74cce8b",
    ],
    [
      "k8s-event",
      "FailedMount",
      "Pod",
      "europe-west1-c",
      "9a0eae4b560cb8b88c9c742ffe3a0cb2740b3f480c780669ea29222cd98acea0",
    ],
    [
      "capacity.stockout",
      "GCE_STOCKOUT",
      "Node",
      "us-east1-b",
      "0b58818db890b3e877ba0e455d8da7a8381f61d5a5733a033c46e42d34885850",
    ],
    ["", "", "", "", "709e80c88487a2411e1ee4dfb9f22a861492d20c4765150c0c794abd70f8147c"],
    ["storm", "CrashLoopBackOff", "Node", "", "8fdc3aab7c6444c4a8c4baba5ddcac72d6db1310fd108a9fd6cc09c28e939264"],
    [
      "quota.forecast",
      "QuotaExhausted",
      "Quota",
      "",
      "564148757112b8eac25c317d449573007125b7c2f7928de0335bb160f9d2bdee",
    ],
  ];
  for (const [kind, reason, object, zone, hex] of vectors) {
    test(`${kind || "empty"}/${reason || "empty"}/${object || "empty"}/${zone || "no zone"}`, () => {
      expect(fingerprint(sha256Hex, kind, reason, object, zone)).toBe(`sha256:${hex}`);
    });
  }
});

describe("Go text forms", () => {
  test("timestamps trim trailing zero fractions", () => {
    expect(rfc3339(Date.parse("2026-07-24T10:00:00Z"))).toBe("2026-07-24T10:00:00Z");
    expect(rfc3339(Date.parse("2026-07-24T10:00:00.500Z"))).toBe("2026-07-24T10:00:00.5Z");
  });

  test("durations", () => {
    expect([0, 500, 1500, 150_000, 300_000, 3_600_000, 5_400_000].map(goDuration)).toEqual([
      "0s",
      "500ms",
      "1.5s",
      "2m30s",
      "5m0s",
      "1h0m0s",
      "1h30m0s",
    ]);
  });
});

const signal: Signal = {
  kind: "cluster-event",
  reason: "CrashLoopBackOff",
  namespace: "checkout",
  kindOfObject: "Pod",
  name: "checkout-svc-7b9d-x4kzq",
  container: "spec.containers{server}",
  uid: "abc-123",
  message: "Back-off restarting failed container",
  eventCount: 5,
  firstSeen: Date.parse("2026-07-24T10:00:00Z"),
  lastSeen: Date.parse("2026-07-24T10:05:00Z"),
  type: "Warning",
  severity: "critical",
  node: "node-1",
  controllerRef: "ReplicaSet/checkout-svc-7b9d",
  labels: { team: "checkout" },
};

describe("payload schema v1", () => {
  test("the frozen cluster-event shape: field order, no stamped identity fields", () => {
    const payload = buildIncidentPayload(
      signal,
      { cluster: "prod-us-central1", zone: "us-east1-b", project: "p" },
      "sha256:x",
      1,
    );
    expect(JSON.stringify(payload)).toBe(
      '{"kind":"cluster-event","reason":"CrashLoopBackOff","namespace":"checkout","kind_of_object":"Pod","name":"checkout-svc-7b9d-x4kzq","container":"spec.containers{server}","uid":"abc-123","message":"Back-off restarting failed container","count":1,"first_seen":"2026-07-24T10:00:00Z","last_seen":"2026-07-24T10:05:00Z","cluster":"prod-us-central1","context":{"controller_ref":"ReplicaSet/checkout-svc-7b9d","node":"node-1","labels":{"team":"checkout"}},"type":"Warning"}',
    );
  });

  test("source kinds carry project, zone, source, severity and fingerprint; enrichment last", () => {
    const payload = buildIncidentPayload(
      { ...signal, kind: "rollout.stall", type: "", labels: {} },
      { cluster: "c", zone: "z", project: "p" },
      "sha256:f",
      1,
      "kind=bundle.target\n",
    );
    expect(Object.keys(payload)).toEqual([
      "kind",
      "reason",
      "namespace",
      "kind_of_object",
      "name",
      "container",
      "uid",
      "message",
      "count",
      "first_seen",
      "last_seen",
      "cluster",
      "project",
      "zone",
      "source",
      "severity",
      "fingerprint",
      "context",
      "type",
      "enrichment",
    ]);
    expect(payload.context).toEqual({ controller_ref: "ReplicaSet/checkout-svc-7b9d", node: "node-1" });
  });

  test("a forecast is the last field: its ETA in RFC 3339 and its basis, byte for byte as the original's saturation pin (D417)", () => {
    const at = Date.parse("2026-07-25T10:00:00Z");
    const payload = buildIncidentPayload(
      {
        kind: "saturation.forecast",
        reason: "forecast_memory",
        namespace: "prod",
        kindOfObject: "Pod",
        name: "web-1",
        container: "app",
        uid: "u1/app",
        message:
          "memory saturation forecast for web-1: current=980.0MiB limit=1.0GiB slope_per_min=3.2MiB — limit reached in ~14m at the observed trend (180 samples over 1h30m0s)",
        eventCount: 1,
        firstSeen: at,
        lastSeen: at,
        type: "",
        severity: "critical",
        node: "node-1",
        forecast: { eta: at + 14 * 60_000, confidenceBasis: "linear-90m-window" },
      },
      { cluster: "prod-us-central1", zone: "" },
      "sha256:68a1c9ff2e58dfb1485ce7be4b9b007b6e9da8b4294201663db908c8f9d9aea0",
      1,
    );
    expect(JSON.stringify(payload)).toBe(
      '{"kind":"saturation.forecast","reason":"forecast_memory","namespace":"prod","kind_of_object":"Pod","name":"web-1","container":"app","uid":"u1/app","message":"memory saturation forecast for web-1: current=980.0MiB limit=1.0GiB slope_per_min=3.2MiB — limit reached in ~14m at the observed trend (180 samples over 1h30m0s)","count":1,"first_seen":"2026-07-25T10:00:00Z","last_seen":"2026-07-25T10:00:00Z","cluster":"prod-us-central1","source":"sentinel","severity":"critical","fingerprint":"sha256:68a1c9ff2e58dfb1485ce7be4b9b007b6e9da8b4294201663db908c8f9d9aea0","context":{"node":"node-1"},"type":"","forecast":{"eta":"2026-07-25T10:14:00Z","confidence_basis":"linear-90m-window"}}',
    );
    expect(forecastBasis(90 * 60_000)).toBe("linear-90m-window");
    expect(forecastBasis(3 * 3_600_000)).toBe("linear-3h-window");
    expect(forecastBasis(7 * 86_400_000)).toBe("linear-7d-window");
    expect(forecastBasis(45_000)).toBe("linear-45s-window");
  });

  test("the message is masked and capped at 2048 bytes", () => {
    const payload = buildIncidentPayload(
      { ...signal, message: `token: Bearer abcdefghijklmnopqrstuvwx ${"y".repeat(3000)}` },
      { cluster: "c" },
      "f",
      1,
    );
    expect(payload.message.startsWith("token: Bearer [REDACTED] ")).toBe(true);
    expect(new TextEncoder().encode(payload.message).length).toBe(2048);
    expect(payload.message.endsWith("... [truncated by watcher]")).toBe(true);
  });

  test("resolved and resolved.reverted", () => {
    const incident = {
      canonicalReason: "CrashLoopBackOff",
      namespace: "checkout",
      kindOfObject: "Pod",
      name: "x",
      container: "spec.containers{server}",
      uid: "abc-123",
      fingerprint: "sha256:f",
      cluster: "prod",
      controllerRef: "ReplicaSet/x",
      firstSeen: Date.parse("2026-07-24T10:00:00Z"),
    };
    const timing = {
      resolvedAt: Date.parse("2026-07-24T10:07:30Z"),
      stableSince: Date.parse("2026-07-24T10:02:30Z"),
      resolution: "recovered" as const,
    };
    expect(JSON.stringify(buildResolvedPayload("resolved", incident, timing))).toBe(
      '{"kind":"resolved","reason":"CrashLoopBackOff","namespace":"checkout","kind_of_object":"Pod","name":"x","container":"spec.containers{server}","uid":"abc-123","fingerprint":"sha256:f","cluster":"prod","first_seen":"2026-07-24T10:00:00Z","resolved_at":"2026-07-24T10:07:30Z","cleared_after":"2m30s","observed_stable_for":"5m0s","resolution":"recovered","context":{"controller_ref":"ReplicaSet/x"}}',
    );
    const reverted = buildResolvedPayload("resolved.reverted", incident, {
      ...timing,
      revertedAt: timing.resolvedAt + 90_000,
    });
    expect(reverted.reverted_after).toBe("1m30s");
    expect(Object.keys(reverted).at(-2)).toBe("reverted_after");
  });
});

describe("masking", () => {
  const cases: Array<[string, string]> = [
    ["-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "[REDACTED]"],
    ['{"private_key":"abc\\ndef"}', '{"private_key":"[REDACTED]"}'],
    ["jwt eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl here", "jwt [REDACTED] here"],
    ["Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==", "Authorization: Basic [REDACTED]"],
    ["key AKIAABCDEFGHIJKLMNOP used", "key [REDACTED] used"],
    ["dial postgres://app:s3cret@db:5432/x", "dial postgres://app:[REDACTED]@db:5432/x"],
    [
      "args --db-password=hunter2 --token abc --token-file=/x",
      "args --db-password=[REDACTED] --token [REDACTED] --token-file=/x",
    ],
    ["Back-off restarting failed container", "Back-off restarting failed container"],
  ];
  for (const [input, output] of cases) {
    test(JSON.stringify(input.slice(0, 30)), () => {
      expect(maskText(input)).toBe(output);
    });
  }
});
