/**
 * Storm correlation (formation, attach, keys in priority order, mined keys and their threshold,
 * window pruning), the storm wire shape, recovery tracking (resolved, flaps, reverted, window end),
 * fitting to --inject-max-bytes and the enrichment bundle format.
 */
import { describe, expect, test } from "bun:test";
import { renderBundle } from "../../../src/watcher/core/enrichment-bundle.ts";
import { FIT_MARK, envelopeBytes, fitPayload } from "../../../src/watcher/core/fit.ts";
import { RecoveryTracker } from "../../../src/watcher/core/recovery.ts";
import { type Ancestor, StormCorrelator, type StormMember } from "../../../src/watcher/core/storm.ts";
import { sha256Hex } from "../../../src/surfaces/http/caller-auth.ts";
import { buildStormMemberPayload, buildStormPayload } from "../../../src/watcher/core/storm-payloads.ts";

const MEMBER_FP = "sha256:e2957792a0b3ad9e29db2051dbc69ff01dfe3a52da8dbb6d1331aa44fe946f8b";
const node = (name: string): Ancestor => ({ kind: "Node", namespace: "", name });
const deployment = (ns: string, name: string): Ancestor => ({ kind: "Deployment", namespace: ns, name });

function member(index: number, namespace = "shop", sessionId?: string): StormMember {
  return {
    key: `uid-${index}|CrashLoopBackOff`,
    fingerprint: MEMBER_FP,
    reason: "CrashLoopBackOff",
    canonicalReason: "CrashLoopBackOff",
    namespace,
    kindOfObject: "Pod",
    name: `pay-${index}`,
    uid: `uid-${index}`,
    severity: "critical",
    firstSeen: Date.parse(`2026-07-24T10:00:0${index}Z`),
    lastSeen: Date.parse(`2026-07-24T10:00:0${index}Z`),
    zone: "",
    ...(sessionId ? { sessionId } : {}),
  };
}

describe("storm correlation", () => {
  test("the third incident on a node forms the storm; the fourth attaches; the exact wire shape", () => {
    const storms = new StormCorrelator({ min: 3, windowMs: 60_000, mineMin: 0 });
    expect(
      storms.observe(
        member(1, "shop", "sess-1"),
        [node("gke-a"), { kind: "Namespace", namespace: "", name: "shop" }],
        [],
        1000,
      ).outcome,
    ).toBe("none");
    expect(storms.observe(member(2, "web", "sess-2"), [node("gke-a")], [], 2000).outcome).toBe("none");
    const formed = storms.observe(member(3, "api"), [node("gke-a")], [], 3000);
    expect(formed.outcome).toBe("formed");
    if (formed.outcome !== "formed") return;
    formed.storm.sessionId = "sess-3";
    expect(JSON.stringify(buildStormPayload(formed.storm, "prod-us-central1", sha256Hex))).toBe(
      `{"kind":"storm","fingerprint":"sha256:8fdc3aab7c6444c4a8c4baba5ddcac72d6db1310fd108a9fd6cc09c28e939264","severity":"critical","cluster":"prod-us-central1","ancestor_kind":"Node","ancestor_name":"gke-a","reason":"CrashLoopBackOff","message":"Node gke-a: 3 incidents across 3 namespace(s) share this blast-radius key; 3 representative incident(s) attached; member sessions are suppressed and route here","affected_count":3,"namespaces_count":3,"first_seen":"2026-07-24T10:00:01Z","last_seen":"2026-07-24T10:00:03Z","representative_incidents":[{"fingerprint":"${MEMBER_FP}","reason":"CrashLoopBackOff","namespace":"shop","kind_of_object":"Pod","name":"pay-1","uid":"uid-1","session_id":"sess-1"},{"fingerprint":"${MEMBER_FP}","reason":"CrashLoopBackOff","namespace":"web","kind_of_object":"Pod","name":"pay-2","uid":"uid-2","session_id":"sess-2"},{"fingerprint":"${MEMBER_FP}","reason":"CrashLoopBackOff","namespace":"api","kind_of_object":"Pod","name":"pay-3","uid":"uid-3"}],"member_fingerprints":["${MEMBER_FP}","${MEMBER_FP}","${MEMBER_FP}"],"context":{"node":"gke-a"}}`,
    );
    const first = formed.storm.members[0];
    if (!first) throw new Error("no member");
    expect(
      buildStormMemberPayload("storm.member_superseded", formed.storm, first, "prod-us-central1", sha256Hex).message,
    ).toBe(
      "this incident was folded into the Node gke-a storm (3 incidents); further followups and the outcome record route to the storm session",
    );
    const attached = storms.observe(member(4), [node("gke-a")], [], 4000);
    expect(attached.outcome).toBe("attached");
    if (attached.outcome === "attached")
      expect(buildStormMemberPayload("storm.member", attached.storm, member(4), "c", sha256Hex).message).toBe(
        "late-arriving incident attached to the Node gke-a storm (now 4 incidents)",
      );
  });

  test("incidents outside the window do not count; no keys means none", () => {
    const storms = new StormCorrelator({ min: 3, windowMs: 60_000, mineMin: 0 });
    storms.observe(member(1), [node("n")], [], 0);
    storms.observe(member(2), [node("n")], [], 10_000);
    expect(storms.observe(member(3), [node("n")], [], 61_000).outcome).toBe("none");
    expect(storms.observe(member(4), [node("n")], [], 62_000).outcome).toBe("formed");
    expect(storms.observe(member(5), [], [], 62_000).outcome).toBe("none");
  });

  test("the first key in priority order that reaches the minimum wins (owner before namespace)", () => {
    const storms = new StormCorrelator({ min: 2, windowMs: 60_000, mineMin: 0 });
    const ns = { kind: "Namespace", namespace: "", name: "shop" };
    storms.observe(member(1), [node("n1"), deployment("shop", "pay"), ns], [], 0);
    const formed = storms.observe(member(2), [node("n2"), deployment("shop", "pay"), ns], [], 1);
    expect(formed.outcome === "formed" && formed.storm.id).toBe("Deployment/shop/pay");
  });

  test("mined keys need their own, higher threshold and are recorded as the key source", () => {
    const storms = new StormCorrelator({ min: 3, windowMs: 60_000, mineMin: 0 });
    const image: Ancestor = { kind: "Image", namespace: "", name: "r.io/a:1", source: "mined:image" };
    for (let i = 1; i <= 4; i++) expect(storms.observe(member(i), [], [image], i).outcome).toBe("none");
    const formed = storms.observe(member(5), [], [image], 5);
    expect(formed.outcome).toBe("formed");
    if (formed.outcome === "formed")
      expect(buildStormPayload(formed.storm, "c", sha256Hex).key_source).toBe("mined:image");
  });

  test("a warning storm becomes critical at ten members", () => {
    const storms = new StormCorrelator({ min: 2, windowMs: 60_000, mineMin: 0 });
    const warn = (i: number) => ({ ...member(i), severity: "warning" as const });
    storms.observe(warn(1), [node("n")], [], 0);
    const formed = storms.observe(warn(2), [node("n")], [], 0);
    if (formed.outcome !== "formed") throw new Error("not formed");
    expect(buildStormPayload(formed.storm, "c", sha256Hex).severity).toBe("warning");
    for (let i = 3; i <= 10; i++) storms.observe(warn(i), [node("n")], [], 0);
    expect(buildStormPayload(formed.storm, "c", sha256Hex).severity).toBe("critical");
  });
});

describe("recovery tracking", () => {
  test("clear for the stable window → resolved; recurrence within the window → reverted", () => {
    const tracker = new RecoveryTracker(300_000);
    tracker.track("k", 0, 0);
    expect(tracker.observe("k", { cleared: true, stableSince: 60_000 }, 100_000)).toBeUndefined();
    const resolved = tracker.observe("k", { cleared: true, stableSince: 60_000 }, 360_000);
    expect(resolved).toEqual({
      kind: "resolved",
      key: "k",
      resolvedAt: 360_000,
      stableSince: 60_000,
      resolution: "recovered",
    });
    const reverted = tracker.observe("k", { cleared: false }, 400_000);
    expect(reverted).toMatchObject({ kind: "resolved.reverted", revertedAt: 400_000, resolvedAt: 360_000 });
  });

  test("a flap resets the window; a later stableSince restarts it", () => {
    const tracker = new RecoveryTracker(300_000);
    tracker.track("k", 0, 0);
    tracker.observe("k", { cleared: true, stableSince: 10_000 }, 20_000);
    tracker.observe("k", { cleared: false }, 200_000);
    expect(tracker.observe("k", { cleared: true, stableSince: 250_000 }, 320_000)).toBeUndefined();
    expect(tracker.observe("k", { cleared: true, stableSince: 250_000 }, 549_000)).toBeUndefined();
    expect(tracker.observe("k", { cleared: true, stableSince: 250_000 }, 550_000)?.kind).toBe("resolved");
  });

  test("clear observations without a transition time keep the running window (no endless restart)", () => {
    const tracker = new RecoveryTracker(60_000);
    tracker.track("k", 0, 0);
    expect(tracker.observe("k", { cleared: true }, 10_000)).toBeUndefined();
    expect(tracker.observe("k", { cleared: true }, 40_000)).toBeUndefined();
    expect(tracker.observe("k", { cleared: true }, 70_000)).toMatchObject({ kind: "resolved", stableSince: 10_000 });
  });

  test("a quiet revert window ends tracking; unjudged incidents are dropped after an hour; 0 disables", () => {
    const tracker = new RecoveryTracker(60_000);
    tracker.track("k", 0, 0);
    tracker.observe("k", { cleared: true, stableSince: 0 }, 60_000);
    expect(tracker.observe("k", { cleared: false }, 200_000)).toBeUndefined();
    expect(tracker.size).toBe(0);
    tracker.track("u", 0, 0);
    tracker.observe("u", undefined, 3_600_001);
    expect(tracker.size).toBe(0);
    const off = new RecoveryTracker(0);
    off.track("k", 0, 0);
    expect(off.size).toBe(0);
  });
});

describe("fit to --inject-max-bytes", () => {
  const payload = {
    kind: "cluster-event",
    uid: "u-1",
    name: "web-1",
    message: "m".repeat(3000),
    count: 1,
    context: { node: "n" },
    enrichment: { bundle: "b".repeat(3000) },
  };

  test("a payload that fits is untouched", () => {
    expect(fitPayload(payload, 100_000)).toEqual({ payload, shed: [] });
  });

  test("enrichment goes first", () => {
    const fitted = fitPayload(payload, 3200);
    expect(fitted.shed).toEqual(["enrichment"]);
    expect(fitted.payload.message).toBe(payload.message);
    expect("enrichment" in fitted.payload).toBe(false);
  });

  test("then the message is cut with the marker to exactly fit; identity never changes", () => {
    const fitted = fitPayload({ ...payload, message: "é".repeat(2000) }, 1000);
    expect(fitted.shed).toEqual(["enrichment", "message"]);
    expect(fitted.payload.message.endsWith(FIT_MARK)).toBe(true);
    expect(envelopeBytes(fitted.payload)).toBeLessThanOrEqual(1000);
    expect(envelopeBytes({ ...fitted.payload, message: `é${fitted.payload.message}` })).toBeGreaterThan(1000);
    expect(fitted.payload).toMatchObject({
      kind: "cluster-event",
      uid: "u-1",
      name: "web-1",
      count: 1,
      context: { node: "n" },
    });
  });

  test("identity alone over the limit: message emptied, sent anyway", () => {
    const fitted = fitPayload({ ...payload, name: "n".repeat(500) }, 100);
    expect(fitted.payload.message).toBe("");
    expect(fitted.payload.name).toBe("n".repeat(500));
  });
});

describe("enrichment bundle", () => {
  const target = { namespace: "prod", kindOfObject: "Pod", name: "api-1", workload: "Deployment/prod/api", pods: 2 };
  const command = (section: string) => `kubectl ${section} -n prod`;
  const sections = {
    spec: ["kind=spec.resource severity=info namespace=prod kind_of_object=Pod name=api-1 section=spec\n"],
    delta: [
      "kind=event severity=warning namespace=prod kind_of_object=Pod name=api-1 reason=BackOff section=delta count=7\n",
    ],
    logs: [
      `kind=log.tail severity=info namespace=prod kind_of_object=Pod name=api-1 section=logs container=app line="${"x".repeat(300)}"\n`,
    ],
  };

  test("head line, sections in order, nothing dropped", () => {
    const rendered = renderBundle({ target, sections, command }, 4096);
    expect(rendered.bundle.split("\n")[0]).toBe(
      "kind=bundle.target severity=info namespace=prod kind_of_object=Pod name=api-1 workload=Deployment/prod/api pods=2 sections=spec,delta,logs",
    );
    expect(rendered.included).toEqual(["spec", "delta", "logs"]);
    expect(rendered.bundle.endsWith(sections.logs[0] ?? "")).toBe(true);
  });

  test("the cap drops whole sections from the first that does not fit; overflow and error trailers after", () => {
    const rendered = renderBundle(
      {
        target: { ...target, skipped: ["secrets"] },
        sections,
        command,
        notComputed: ["edges"],
        errors: [{ stage: "logs", error: "listing pods: boom" }],
      },
      400,
    );
    expect(rendered.included).toEqual(["spec", "delta"]);
    expect(rendered.dropped).toEqual(["logs"]);
    const lines = rendered.bundle.trimEnd().split("\n");
    expect(lines[0]).toContain("skipped=secrets sections=spec,delta");
    expect(lines.slice(-3)).toEqual([
      'overflow section=edges cmd="kubectl edges -n prod"',
      'overflow section=logs cmd="kubectl logs -n prod"',
      'enrichment_error stage=logs error="listing pods: boom"',
    ]);
    const capped = lines.slice(0, 3).join("\n").length + 1;
    expect(capped).toBeLessThanOrEqual(400);
  });
});
