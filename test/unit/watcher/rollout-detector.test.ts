/**
 * The rollout detector (D380): a rollout whose new revision gains no ready replica for the observe
 * time while the old revision serves (ratio at least 0.9) stalls once; progress restarts the
 * countdown; completion or rollback forgets it so a later stall fires again; StatefulSets are
 * judged from their pods' revisions; the first list emits nothing; deletes forget state.
 */
import { describe, expect, test } from "bun:test";
import { ROLLOUT_DEFAULTS, ROLLOUT_SPEC, RolloutDetector } from "../../../src/watcher/core/sources/rollout-detector.ts";
import { sourceSettings } from "../../../src/watcher/sources/source-registry.ts";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { deployment, MIN, pod, replicaSet, statefulSet, T0 } from "./workload-objects.ts";

const settings = { observeMs: 3 * MIN, oldReadyRatio: 0.9 };

function rolling(detector: RolloutDetector, newReady: number, oldReady = 10, initial = false): void {
  detector.observe("deployments", "add", deployment("d1", "web"), T0, initial);
  detector.observe("replicasets", initial ? "add" : "update", replicaSet("rs-old", "d1", 1, 10, oldReady), T0, initial);
  detector.observe("replicasets", initial ? "add" : "update", replicaSet("rs-new", "d1", 2, 3, newReady), T0, initial);
}

describe("rollout.stall on a Deployment", () => {
  test("fires once at the observe time, not before, with the workload's UID", () => {
    const detector = new RolloutDetector(settings);
    rolling(detector, 0, 10, true);
    expect(detector.tick(T0)).toEqual([]);
    expect(detector.tick(T0 + 3 * MIN - 1)).toEqual([]);
    const [signal, ...rest] = detector.tick(T0 + 3 * MIN);
    expect(rest).toEqual([]);
    expect(signal).toMatchObject({
      kind: "rollout.stall",
      reason: "rollout_stall",
      uid: "d1",
      kindOfObject: "Deployment",
      name: "web",
      namespace: "shop",
      severity: "warning",
      eventCount: 1,
      firstSeen: T0 + 3 * MIN,
      type: "",
    });
    expect(signal?.message).toContain("revision 2");
    expect(detector.tick(T0 + 10 * MIN)).toEqual([]);
  });

  test("ready progress restarts the countdown", () => {
    const detector = new RolloutDetector(settings);
    rolling(detector, 0);
    detector.tick(T0);
    detector.observe("replicasets", "update", replicaSet("rs-new", "d1", 2, 3, 1), T0 + 2 * MIN, false);
    expect(detector.tick(T0 + 2 * MIN)).toEqual([]);
    expect(detector.tick(T0 + 4 * MIN)).toEqual([]);
    expect(detector.tick(T0 + 5 * MIN)).toHaveLength(1);
  });

  test("an old revision below 0.9 ready is not a stall (the rollout is not the only trouble)", () => {
    const detector = new RolloutDetector(settings);
    rolling(detector, 0, 8);
    detector.tick(T0);
    expect(detector.tick(T0 + 5 * MIN)).toEqual([]);
  });

  test("completion forgets the stall; a later rollout that stalls fires again", () => {
    const detector = new RolloutDetector(settings);
    rolling(detector, 0);
    detector.tick(T0);
    expect(detector.tick(T0 + 3 * MIN)).toHaveLength(1);
    detector.observe("replicasets", "update", replicaSet("rs-old", "d1", 1, 0, 0), T0 + 4 * MIN, false);
    expect(detector.tick(T0 + 4 * MIN)).toEqual([]);
    expect(detector.size.countdowns).toBe(0);
    detector.observe("replicasets", "add", replicaSet("rs-3", "d1", 3, 3, 0), T0 + 5 * MIN, false);
    detector.observe("replicasets", "update", replicaSet("rs-new", "d1", 2, 10, 10), T0 + 5 * MIN, false);
    detector.tick(T0 + 5 * MIN);
    expect(detector.tick(T0 + 8 * MIN)).toHaveLength(1);
  });

  test("a rollback (the old template becomes the newest revision) forgets the stall", () => {
    const detector = new RolloutDetector(settings);
    rolling(detector, 0);
    detector.tick(T0);
    expect(detector.tick(T0 + 3 * MIN)).toHaveLength(1);
    // The rollback: rs-old gets revision 3 and is scaled up; rs-new scales down to 0.
    detector.observe("replicasets", "update", replicaSet("rs-old", "d1", 3, 10, 10), T0 + 4 * MIN, false);
    detector.observe("replicasets", "update", replicaSet("rs-new", "d1", 2, 0, 0), T0 + 4 * MIN, false);
    expect(detector.tick(T0 + 4 * MIN)).toEqual([]);
    expect(detector.size.countdowns).toBe(0);
  });

  test("deletes forget every entry (bounded state)", () => {
    const detector = new RolloutDetector(settings);
    rolling(detector, 0);
    detector.tick(T0);
    detector.observe("replicasets", "delete", replicaSet("rs-old", "d1", 1, 10, 10), T0, false);
    detector.observe("replicasets", "delete", replicaSet("rs-new", "d1", 2, 3, 0), T0, false);
    detector.observe("deployments", "delete", deployment("d1", "web"), T0, false);
    expect(detector.size).toEqual({ workloads: 0, replicaSets: 0, pods: 0, countdowns: 0 });
    expect(detector.tick(T0 + 10 * MIN)).toEqual([]);
  });
});

describe("rollout.stall on a StatefulSet", () => {
  const owner: [string, string, string] = ["StatefulSet", "db", "s1"];

  test("judged from its pods' revisions; completion clears", () => {
    const detector = new RolloutDetector(settings);
    detector.observe("statefulsets", "add", statefulSet("s1", "rev-a", "rev-b"), T0, true);
    for (const id of ["p1", "p2", "p3"])
      detector.observe("pods", "add", pod(id, { ready: true, owner, revision: "rev-a" }), T0, true);
    detector.observe("pods", "add", pod("p4", { ready: false, owner, revision: "rev-b" }), T0, true);
    detector.observe("pods", "add", pod("other", { ready: false }), T0, true);
    expect(detector.size.pods).toBe(4);
    detector.tick(T0);
    expect(detector.tick(T0 + 3 * MIN - 1)).toEqual([]);
    expect(detector.tick(T0 + 3 * MIN)).toMatchObject([
      { uid: "s1", kindOfObject: "StatefulSet", reason: "rollout_stall" },
    ]);
    detector.observe("statefulsets", "update", statefulSet("s1", "rev-b", "rev-b"), T0 + 4 * MIN, false);
    expect(detector.tick(T0 + 4 * MIN)).toEqual([]);
    expect(detector.size.countdowns).toBe(0);
    detector.observe("pods", "delete", pod("p4", { ready: false, owner, revision: "rev-b" }), T0, false);
    expect(detector.size.pods).toBe(3);
  });
});

describe("rollout settings", () => {
  test("defaults without a flag: 3m observe, old ratio 0.9, a 15s tick, the reference's grants", () => {
    expect(ROLLOUT_DEFAULTS).toEqual({ observeMs: 3 * MIN, oldReadyRatio: 0.9 });
    expect(ROLLOUT_SPEC.tickMs).toBe(15_000);
    expect(ROLLOUT_SPEC.required.map((check) => `${check.verb} ${check.group}/${check.resource}`)).toEqual([
      "list /pods",
      "watch /pods",
      "list apps/deployments",
      "watch apps/deployments",
      "list apps/replicasets",
      "watch apps/replicasets",
      "list apps/statefulsets",
      "watch apps/statefulsets",
    ]);
    const base = ["--daemon-url=http://127.0.0.1:1", "--token-env=T"];
    const plain = watcherConfigFromArgv(base);
    const flagged = watcherConfigFromArgv([...base, "--rollout-observe=45s"]);
    if (!plain.ok || !flagged.ok) throw new Error("config refused");
    expect(sourceSettings("rollout", plain.value)).toEqual({ observeMs: 3 * MIN, oldReadyRatio: 0.9 });
    expect(sourceSettings("rollout", flagged.value)).toEqual({ observeMs: 45_000, oldReadyRatio: 0.9 });
  });
});
