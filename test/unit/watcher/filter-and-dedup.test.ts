/**
 * Filter gates in order, canonical reasons, image-pull cause classification with its memo, and
 * the dedup cache: the four observe cases, the capacity bound, snapshot and restore.
 */
import { describe, expect, test } from "bun:test";
import { DedupCache, dedupKey } from "../../../src/watcher/core/dedup-cache.ts";
import { type FilterSettings, decideFilter } from "../../../src/watcher/core/filter.ts";
import { PullClassMemo, classifyPullCause, registryHost } from "../../../src/watcher/core/pull-class.ts";
import { DEFAULT_REASONS, canonicalReasonForEvent } from "../../../src/watcher/core/reasons.ts";
import type { Signal } from "../../../src/watcher/core/signal.ts";

const settings: FilterSettings = {
  reasons: new Set(DEFAULT_REASONS),
  allowNamespaces: new Set(),
  excludeNamespaces: new Set(["kube-system"]),
  backoffMinCount: 3,
  imagePullTransientMinCount: 3,
  unhealthyMinCount: 3,
};

function event(overrides: Partial<Signal> = {}): Signal {
  return {
    kind: "cluster-event",
    reason: "BackOff",
    namespace: "shop",
    kindOfObject: "Pod",
    name: "web-1",
    uid: "u1",
    message: "Back-off restarting failed container",
    eventCount: 3,
    firstSeen: 0,
    lastSeen: 0,
    type: "Warning",
    severity: "critical",
    ...overrides,
  };
}

describe("filter", () => {
  test("reason allow-list applies to event kinds only", () => {
    expect(decideFilter(event({ reason: "Pulled" }), settings, "unknown")).toBe("reason_not_allowed");
    expect(
      decideFilter(event({ kind: "rollout.stall", reason: "rollout_stall" }), settings, "unknown"),
    ).toBeUndefined();
  });

  test("exclusion wins over inclusion; node events fail a set allow-list, source signals pass", () => {
    const allow = { ...settings, allowNamespaces: new Set(["shop", "kube-system"]) };
    expect(decideFilter(event({ namespace: "kube-system" }), allow, "unknown")).toBe("namespace_excluded");
    expect(decideFilter(event({ namespace: "web" }), allow, "unknown")).toBe("namespace_not_allowed");
    expect(decideFilter(event({ namespace: "", kindOfObject: "Node", reason: "NodeNotReady" }), allow, "unknown")).toBe(
      "namespace_not_allowed",
    );
    expect(
      decideFilter(
        event({ namespace: "", kind: "objectstate.node_notready", reason: "node_notready" }),
        allow,
        "unknown",
      ),
    ).toBeUndefined();
    expect(
      decideFilter(event({ namespace: "", kindOfObject: "Node", reason: "NodeNotReady" }), settings, "unknown"),
    ).toBeUndefined();
  });

  test("min-count gates", () => {
    expect(decideFilter(event({ eventCount: 2 }), settings, "unknown")).toBe("crashloop_debounce");
    expect(decideFilter(event({ eventCount: 1 }), { ...settings, backoffMinCount: 1 }, "unknown")).toBeUndefined();
    expect(decideFilter(event({ reason: "Unhealthy", eventCount: 2 }), settings, "unknown")).toBe("unhealthy_debounce");
    const pull = event({ reason: "ErrImagePull", eventCount: 1, message: "x" });
    expect(decideFilter(pull, settings, "retryable")).toBe("imagepull_transient_debounce");
    expect(decideFilter(pull, settings, "terminal")).toBeUndefined();
    expect(decideFilter(pull, settings, "unknown")).toBeUndefined();
    expect(decideFilter({ ...pull, eventCount: 3 }, settings, "retryable")).toBeUndefined();
  });
});

describe("canonical reasons", () => {
  test("message-aware families", () => {
    expect(canonicalReasonForEvent("BackOff", 'Back-off pulling image "x"')).toBe("ImagePullBackOff");
    expect(canonicalReasonForEvent("BackOff", "Back-off restarting failed container")).toBe("CrashLoopBackOff");
    expect(canonicalReasonForEvent("Failed", 'Failed to pull image "x": boom')).toBe("ImagePullBackOff");
    expect(canonicalReasonForEvent("Failed", "Error: something")).toBe("Failed");
    expect(canonicalReasonForEvent("ErrImagePull", "")).toBe("ImagePullBackOff");
    expect(canonicalReasonForEvent("FailedMount", "")).toBe("FailedMount");
  });
});

describe("image-pull causes", () => {
  test("terminal wins, retryable phrases, unknown, and the image name does not count", () => {
    expect(classifyPullCause('Failed to pull image "r.io/a:1": manifest unknown; 429 too many requests')).toBe(
      "terminal",
    );
    expect(classifyPullCause('Failed to pull image "r.io/a:1": toomanyrequests: rate limited')).toBe("retryable");
    expect(classifyPullCause('Failed to pull image "r.io/a:1": dial tcp: i/o timeout')).toBe("retryable");
    expect(classifyPullCause('Failed to pull image "r.io/a:1": 429')).toBe("unknown");
    expect(classifyPullCause('Failed to pull image "r.io/denied/notfound:1": connection reset by peer')).toBe(
      "retryable",
    );
    expect(classifyPullCause("Error: ErrImagePull")).toBeUndefined();
  });

  test("registry host", () => {
    expect(registryHost("nginx:1")).toBe("docker.io");
    expect(registryHost("library/nginx")).toBe("docker.io");
    expect(registryHost("gcr.io/p/x")).toBe("gcr.io");
    expect(registryHost("localhost/x")).toBe("localhost");
    expect(registryHost("r:5000/x")).toBe("r:5000");
  });

  test("causeless follow-ups inherit by uid, then a retryable class by host, within their ttl", () => {
    const memo = new PullClassMemo();
    expect(memo.classify("u1", 'Failed to pull image "r.io/a:1": 503 Service Unavailable', 0)).toBe("retryable");
    expect(memo.classify("u1", "Error: ErrImagePull", 60_000)).toBe("retryable");
    expect(memo.classify("u2", 'Back-off pulling image "r.io/b:2"', 60_000)).toBe("retryable");
    expect(memo.classify("u3", 'Back-off pulling image "r.io/c:3"', 3 * 60_000)).toBe("unknown");
    expect(memo.classify("u1", "Error: ErrImagePull", 11 * 60_000)).toBe("unknown");
    memo.classify("u4", 'Failed to pull image "q.io/a:1": unauthorized', 0);
    expect(memo.classify("u5", 'Back-off pulling image "q.io/z:1"', 1000)).toBe("unknown");
  });
});

describe("dedup cache", () => {
  const key = dedupKey("uid-1", "CrashLoopBackOff");

  test("new, activity inside the window, replay, and a fresh incident after the window", () => {
    const cache = new DedupCache(300_000);
    expect(cache.observe(key, 1000, 10_000).outcome).toBe("new");
    const inside = cache.observe(key, 2000, 20_000);
    expect(inside).toMatchObject({ outcome: "duplicate", replay: false });
    expect(inside.entry.count).toBe(2);
    const replay = cache.observe(key, 2000, 30_000);
    expect(replay).toMatchObject({ outcome: "duplicate", replay: true });
    expect(replay.entry.lastSeen).toBe(20_000);
    expect(cache.observe(key, 3000, 20_000 + 300_001).outcome).toBe("new");
    expect(cache.get(key)?.count).toBe(1);
  });

  test("a steady stream keeps one incident; a replay after the window is still a duplicate", () => {
    const cache = new DedupCache(60_000);
    cache.observe(key, 0, 0);
    for (let t = 1; t <= 10; t++) expect(cache.observe(key, t * 50_000, t * 50_000).outcome).toBe("duplicate");
    expect(cache.observe(key, 100, 10_000_000).outcome).toBe("duplicate");
  });

  test("full: the entry with the oldest lastSeen goes", () => {
    const cache = new DedupCache(300_000, 3);
    cache.observe("a|R", 1, 1);
    cache.observe("b|R", 1, 2);
    cache.observe("c|R", 1, 3);
    cache.observe("a|R", 2, 4);
    cache.observe("d|R", 1, 5);
    expect([...cache.keys()].sort()).toEqual(["a|R", "c|R", "d|R"]);
  });

  test("snapshot and restore round-trip; malformed entries and unknown fields are skipped", () => {
    const cache = new DedupCache(300_000);
    cache.observe(key, Date.parse("2026-07-24T10:05:00Z"), Date.parse("2026-07-24T10:00:00Z"));
    cache.bind(key, "sess-1", {
      namespace: "checkout",
      kind_of_object: "Pod",
      name: "x",
      fingerprint: "sha256:f",
      cluster: "prod",
      first_event: 5,
    });
    const snapshot = JSON.parse(JSON.stringify(cache.snapshot()));
    expect(snapshot[key]).toMatchObject({
      session_id: "sess-1",
      first_seen: "2026-07-24T10:00:00Z",
      event_last_ts: "2026-07-24T10:05:00Z",
      count: 1,
    });
    const restored = new DedupCache(300_000);
    expect(
      restored.restore({
        ...snapshot,
        "bad|X": { count: "no" },
        nokey: snapshot[key],
        [`${key}2`]: { ...snapshot[key], future_field: 1 },
      }),
    ).toBe(2);
    expect(restored.get(key)).toEqual(cache.get(key) as never);
    expect(restored.restore("garbage")).toBe(0);
  });
});
