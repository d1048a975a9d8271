/**
 * The startup plan for the sources of the contract (D384, D386): the `auto` summary block (an
 * opening line, one line per source, a closing `auto resolved →` line); a source's scoped grants
 * replace its spec's; a poll gated on an API the cluster does not serve is left out and said on
 * the source's line; discovery is asked only for what the named sources need; a denied optional
 * grant (D392) leaves its part out with an `enabled, degraded` line, never fatal.
 */
import { describe, expect, test } from "bun:test";
import {
  type AccessAnswer,
  type AccessCheck,
  type DiscoveryAnswer,
  accessChecksFor,
  discoveryNeeds,
  optionalAccess,
  planAccess,
} from "../../../src/watcher/core/access-plan.ts";

const allowAll = (): AccessAnswer => ({ allowed: true });
const served =
  (apis: Record<string, string[]>) =>
  (groupVersion: string): DiscoveryAnswer => ({ resources: apis[groupVersion] ?? [] });
const noApis = served({});

describe("source plan", () => {
  test("auto: the summary block opens, names each source once, and closes with what it resolved to", () => {
    const plan = planAccess(
      {
        // A name no build has: the sources still unbuilt change as they land.
        sources: { auto: true, names: ["cluster-events", "expiry", "future-one"] },
        storm: "off",
        discovery: noApis,
      },
      allowAll,
    );
    expect(plan.refusal).toBeUndefined();
    expect(plan.sources).toEqual(["cluster-events", "expiry"]);
    expect(plan.notes[0]).toStartWith("sources: auto — probing the portable set (RBAC per source");
    expect(plan.notes.slice(1, 5)).toEqual([
      "sources not available in this build, off: future-one",
      "source cluster-events: enabled (always on — a watcher that cannot watch events is misdeployed)",
      "source expiry: enabled (cert-manager.io/v1 certificates not served: not read)",
      "sources: auto resolved → cluster-events,expiry (quota, notifications and token-burn stay explicit-only: a cloud quota provider, --notifications-subscription, and the agent daemon's cost stack)",
    ]);
    expect(plan.without).toEqual({ expiry: ["certificates"] });
    // An explicit list prints no summary block, only the source lines.
    const explicit = planAccess(
      {
        sources: { auto: false, names: ["expiry"] },
        storm: "off",
        discovery: served({ "cert-manager.io/v1": ["certificates"] }),
      },
      allowAll,
    );
    expect(explicit.notes).toEqual(["source expiry: enabled", "storm: off"]);
    expect(explicit.without).toEqual({});
  });

  test("expiry under auto without a grant is one line; named, it refuses naming the grant", () => {
    const denySecrets = (check: AccessCheck): AccessAnswer =>
      check.resource === "secrets" ? { allowed: false, reason: "no RBAC policy matched" } : { allowed: true };
    const auto = planAccess(
      { sources: { auto: true, names: ["cluster-events", "expiry"] }, storm: "off", discovery: noApis },
      denySecrets,
    );
    expect(auto.sources).toEqual(["cluster-events"]);
    expect(auto.notes).toContain(
      'source expiry: disabled (missing "list secrets cluster-wide" — grant it, or name it in --sources to make this fatal)',
    );
    const named = planAccess(
      { sources: { auto: false, names: ["expiry"] }, storm: "off", discovery: noApis },
      denySecrets,
    );
    expect(named.refusal).toContain('source "expiry" requires permission to "list secrets cluster-wide"');
  });

  test("scoped grants replace the spec's: list secrets in each namespace, never cluster-wide", () => {
    const scoped = {
      expiry: {
        required: [
          { verb: "list", group: "", resource: "secrets", namespace: "shop" },
          { verb: "list", group: "", resource: "serviceaccounts", namespace: "shop" },
        ],
        polls: [
          {
            name: "certificates/shop",
            path: "/apis/cert-manager.io/v1/namespaces/shop/certificates",
            everyMs: 1,
            discovery: { groupVersion: "cert-manager.io/v1", resource: "certificates" },
          },
        ],
      },
    };
    const input = { sources: { auto: false, names: ["expiry"] }, storm: "off" as const, scoped };
    expect(accessChecksFor(input).map((check) => `${check.resource}@${check.namespace ?? "*"}`)).toEqual([
      "secrets@shop",
      "serviceaccounts@shop",
    ]);
    const plan = planAccess({ ...input, discovery: noApis }, allowAll);
    expect(plan.without).toEqual({ expiry: ["certificates/shop"] });
    expect(discoveryNeeds(input)).toEqual(["cert-manager.io/v1"]);
    expect(discoveryNeeds({ sources: { auto: false, names: ["cluster-events"] } })).toEqual([]);
  });

  test("a discovery request that fails is fatal (the cluster was not reached), like an access review's", () => {
    const plan = planAccess(
      {
        sources: { auto: true, names: ["cluster-events", "expiry"] },
        storm: "off",
        discovery: () => ({ error: "connection refused" }),
      },
      allowAll,
    );
    expect(plan).toMatchObject({ unreachable: true });
    expect(plan.refusal).toContain("discovery of cert-manager.io/v1 failed: connection refused");
  });

  const metricsServed = served({ "metrics.k8s.io/v1beta1": ["pods"] });
  const denyProxy = (check: AccessCheck): AccessAnswer =>
    check.subresource === "proxy" ? { allowed: false, reason: "Warden denies nodes/proxy" } : { allowed: true };

  test("optional grants are reviewed beside the required ones (D392)", () => {
    const checks = accessChecksFor({ sources: { auto: false, names: ["saturation"] }, storm: "off" });
    expect(
      checks.map(
        (check) => `${check.verb} ${check.resource}${check.subresource ? `/${check.subresource}` : ""}.${check.group}`,
      ),
    ).toEqual(["get pods.metrics.k8s.io", "list pods.metrics.k8s.io", "list pods.", "list nodes.", "get nodes/proxy."]);
    expect(discoveryNeeds({ sources: { auto: false, names: ["saturation"] } })).toEqual(["metrics.k8s.io/v1beta1"]);
  });

  test("a denied optional grant leaves its part out and says so on the source's line, under auto and a named list alike", () => {
    for (const auto of [true, false]) {
      const plan = planAccess(
        { sources: { auto, names: ["cluster-events", "saturation"] }, storm: "off", discovery: metricsServed },
        denyProxy,
      );
      expect(plan.refusal).toBeUndefined();
      expect(plan.sources).toEqual(["cluster-events", "saturation"]);
      expect(plan.without).toEqual({ saturation: ["node-stats"] });
      expect(plan.notes).toContain(
        "source saturation: enabled, degraded (get nodes/proxy cluster-wide denied: Warden denies nodes/proxy — no PVC forecasts)",
      );
    }
    const granted = planAccess(
      { sources: { auto: false, names: ["saturation"] }, storm: "off", discovery: metricsServed },
      allowAll,
    );
    expect(granted.notes).toEqual(["source saturation: enabled", "storm: off"]);
    expect(granted.without).toEqual({});
  });

  test("an optional grant's review that fails is fatal, as a required one's", () => {
    const plan = planAccess(
      { sources: { auto: true, names: ["cluster-events", "saturation"] }, storm: "off", discovery: metricsServed },
      (check) => (check.subresource === "proxy" ? { error: "connection reset" } : { allowed: true }),
    );
    expect(plan).toMatchObject({ unreachable: true });
    expect(plan.refusal).toBe('access review for source "saturation" failed: connection reset');
  });

  test("saturation without the metrics API: auto turns it off with one line; named, it refuses", () => {
    const auto = planAccess(
      { sources: { auto: true, names: ["cluster-events", "saturation"] }, storm: "off", discovery: noApis },
      allowAll,
    );
    expect(auto.sources).toEqual(["cluster-events"]);
    expect(auto.notes[0]).toContain("discovery of metrics.k8s.io/v1beta1 for saturation");
    expect(auto.notes.filter((note) => note.startsWith("source saturation"))).toEqual([
      "source saturation: disabled (metrics.k8s.io/v1beta1 unavailable — install metrics-server)",
    ]);
    const named = planAccess(
      { sources: { auto: false, names: ["saturation"] }, storm: "off", discovery: noApis },
      allowAll,
    );
    expect(named.refusal).toBe(
      'source "saturation" needs the metrics.k8s.io/v1beta1 API (pods), which this cluster does not serve — install metrics-server, or remove it from --sources',
    );
  });

  test("the access re-check tracks an enabled source's optional grant held at startup, never one denied", () => {
    const input = { sources: { auto: false, names: ["saturation"] }, storm: "off" as const, discovery: metricsServed };
    const held = planAccess(input, allowAll);
    expect(optionalAccess(held).map((check) => `${check.verb} ${check.resource}/${check.subresource}`)).toEqual([
      "get nodes/proxy",
    ]);
    expect(optionalAccess(planAccess(input, denyProxy))).toEqual([]);
  });
});
