/**
 * The ingress and gateway detectors (D387) and the discovery gate (D386): ingress turns Warning
 * events of the ingress controller into its three kinds, ignores the first list and everything
 * else; gateway fires a failed condition of the current generation once its grace has run from
 * lastTransitionTime (at arm when already past it), not before, never twice, not for Pending or a
 * stale generation, and forgets an object once it recovers or is deleted; a missing Gateway API
 * disables gateway under auto with one line and refuses it when named.
 */
import { describe, expect, test } from "bun:test";
import { type AccessAnswer, type DiscoveryAnswer, planAccess } from "../../../src/watcher/core/access-plan.ts";
import { GatewayDetector } from "../../../src/watcher/core/sources/gateway-source.ts";
import { ingressDetector } from "../../../src/watcher/core/sources/ingress-source.ts";

const NOW = Date.parse("2026-12-01T12:00:00Z");
const MINUTE = 60_000;

function event(kind: string, reason: string, type = "Warning") {
  return {
    metadata: { namespace: "shop", name: "e1" },
    involvedObject: { kind, namespace: "shop", name: "web", uid: `uid-${kind}` },
    reason,
    type,
    message: "googleapi: Error 400",
  };
}

describe("ingress", () => {
  test("Sync and Translate on an Ingress, NEG reasons on a Service; Warning only; the first list is history", () => {
    const detector = ingressDetector();
    const seen = (object: ReturnType<typeof event>, initial = false) =>
      detector.observe("events", "add", object, NOW, initial).map((one) => [one.kind, one.reason, one.kindOfObject]);
    expect(seen(event("Ingress", "Sync"))).toEqual([["ingress.sync_failed", "sync_failed", "Ingress"]]);
    expect(seen(event("Ingress", "Translate"))).toEqual([["ingress.translate_failed", "translate_failed", "Ingress"]]);
    for (const reason of ["SyncNetworkEndpointGroupFailed", "AttachFailed", "DetachFailed", "RetryFailed"])
      expect(seen(event("Service", reason))).toEqual([["ingress.neg_failed", "neg_failed", "Service"]]);
    expect(seen(event("Ingress", "Sync", "Normal"))).toEqual([]);
    expect(seen(event("Service", "Sync"))).toEqual([]);
    expect(seen(event("Ingress", "AttachFailed"))).toEqual([]);
    expect(seen(event("Ingress", "Sync"), true)).toEqual([]);
    expect(detector.observe("events", "delete", event("Ingress", "Sync"), NOW, false)).toEqual([]);
    const [signal] = detector.observe("events", "update", event("Ingress", "Sync"), NOW, false);
    expect(signal).toMatchObject({
      severity: "warning",
      uid: "uid-Ingress",
      namespace: "shop",
      name: "web",
      eventCount: 1,
    });
    expect(signal?.message).toBe("Sync: googleapi: Error 400");
  });
});

function gateway(
  conditions: Record<string, unknown>[],
  generation = 2,
  listeners: Record<string, unknown>[] = [],
): Record<string, unknown> {
  return {
    metadata: { namespace: "shop", name: "gw", uid: "uid-gw", generation },
    status: { conditions, listeners },
  };
}

const failed = (type: string, since: number, extra: Record<string, unknown> = {}) => ({
  type,
  status: "False",
  reason: "Invalid",
  message: "no address",
  observedGeneration: 2,
  lastTransitionTime: new Date(since).toISOString(),
  ...extra,
});

describe("gateway", () => {
  test("a failed condition fires once its grace has run from lastTransitionTime, not before, never twice", () => {
    const detector = new GatewayDetector({ graceMs: 5 * MINUTE });
    const object = gateway([failed("Programmed", NOW)]);
    expect(detector.observe("gateways", "add", object, NOW + MINUTE, false)).toEqual([]);
    expect(detector.tick(NOW + 5 * MINUTE - 1)).toEqual([]);
    const fired = detector.tick(NOW + 5 * MINUTE);
    expect(fired).toHaveLength(1);
    expect(fired[0]).toMatchObject({
      kind: "gateway.programming_failed",
      reason: "programming_failed",
      kindOfObject: "Gateway",
      namespace: "shop",
      name: "gw",
      uid: "uid-gw",
      severity: "warning",
    });
    expect(fired[0]?.message).toBe(
      "Gateway shop/gw: Programmed=False (Invalid: no address) since 2026-12-01T12:00:00Z",
    );
    expect(detector.tick(NOW + 10 * MINUTE)).toEqual([]);
    expect(detector.observe("gateways", "update", object, NOW + 11 * MINUTE, false)).toEqual([]);
  });

  test("level-triggered: already past its grace at arm, it fires on the first list", () => {
    const detector = new GatewayDetector({ graceMs: 5 * MINUTE });
    const listener = { name: "https", conditions: [failed("ResolvedRefs", NOW - 10 * MINUTE)] };
    const signals = detector.observe("gateways", "add", gateway([], 2, [listener]), NOW, true);
    expect(signals.map((one) => one.message)).toEqual([
      "Gateway shop/gw: listener https ResolvedRefs=False (Invalid: no address) since 2026-12-01T11:50:00Z",
    ]);
  });

  test("Pending, True, another generation or another condition type never fire", () => {
    const detector = new GatewayDetector({ graceMs: MINUTE });
    const old = NOW - 60 * MINUTE;
    const quiet = [
      gateway([failed("Programmed", old, { reason: "Pending" })]),
      gateway([failed("Programmed", old, { status: "True" })]),
      gateway([failed("Programmed", old, { observedGeneration: 1 })]),
      gateway([failed("Ready", old)]),
    ];
    for (const object of quiet) expect(detector.observe("gateways", "add", object, NOW, true)).toEqual([]);
    expect(detector.size).toBe(0);
  });

  test("an HTTPRoute rejected by its parent; recovered or deleted, it is forgotten and may fire again", () => {
    const detector = new GatewayDetector({ graceMs: MINUTE });
    const route = (conditions: Record<string, unknown>[]) => ({
      metadata: { namespace: "shop", name: "web", uid: "uid-route", generation: 2 },
      status: { parents: [{ parentRef: { name: "gw" }, conditions }] },
    });
    const rejected = route([failed("Accepted", NOW - 2 * MINUTE, { reason: "NotAllowedByListeners" })]);
    const [signal] = detector.observe("httproutes", "add", rejected, NOW, false);
    expect(signal).toMatchObject({
      kind: "gateway.route_rejected",
      reason: "route_rejected",
      kindOfObject: "HTTPRoute",
    });
    expect(signal?.message).toContain("HTTPRoute shop/web: parent gw Accepted=False (NotAllowedByListeners");
    expect(detector.observe("httproutes", "update", route([]), NOW + MINUTE, false)).toEqual([]);
    expect(detector.size).toBe(0);
    expect(detector.observe("httproutes", "update", rejected, NOW + 2 * MINUTE, false)).toHaveLength(1);
    expect(detector.observe("httproutes", "delete", rejected, NOW + 3 * MINUTE, false)).toEqual([]);
    expect(detector.size).toBe(0);
  });
});

describe("discovery gate", () => {
  const allowAll = (): AccessAnswer => ({ allowed: true });
  const without = (): DiscoveryAnswer => ({ resources: [] });
  const served = (groupVersion: string): DiscoveryAnswer =>
    groupVersion === "gateway.networking.k8s.io/v1" ? { resources: ["gateways", "httproutes"] } : { resources: [] };

  test("auto without the Gateway API: gateway disabled with one line naming the API; served, enabled", () => {
    const names = ["cluster-events", "ingress", "gateway"];
    const missing = planAccess({ sources: { auto: true, names }, storm: "off", discovery: without }, allowAll);
    expect(missing.sources).toEqual(["cluster-events", "ingress"]);
    expect(missing.notes.filter((note) => note.startsWith("source gateway"))).toEqual([
      "source gateway: disabled (gateway.networking.k8s.io/v1 unavailable — install the Gateway API CRDs)",
    ]);
    expect(missing.notes[0]).toContain("discovery of gateway.networking.k8s.io/v1 for gateway");
    const present = planAccess({ sources: { auto: true, names }, storm: "off", discovery: served }, allowAll);
    expect(present.sources).toEqual(names);
  });

  test("named without the Gateway API: startup refuses naming it, even though RBAC says yes", () => {
    const plan = planAccess(
      { sources: { auto: false, names: ["gateway"] }, storm: "off", discovery: without },
      allowAll,
    );
    expect(plan.refusal).toBe(
      'source "gateway" needs the gateway.networking.k8s.io/v1 API (gateways or httproutes), which this cluster does not serve — install the Gateway API CRDs, or remove it from --sources',
    );
  });
});
