/**
 * The occurrence store's memory against the fake apiserver and a real agent daemon (D424-D427):
 * a watcher restarted with `--store` restores its topology graph snapshot, so five pods failing
 * on one node form one storm while the pods list is still failing; the graph's tombstones are
 * pruned 2 h after the deletion under pod churn (the clock driven through the runner's options);
 * the store stays under `--store-max-mb` under a burst, and with the default `--distill-interval`
 * (no flag set) the facts hold what the size bound pruned.
 */
import { describe, expect, test } from "bun:test";
import { statSync } from "node:fs";
import { join } from "node:path";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import type { Signal } from "../../../src/watcher/core/signal.ts";
import { OccurrenceStore } from "../../../src/watcher/occurrence-store.ts";
import { waitFor } from "../../support/daemon.ts";
import { startTriageWatcher, triageScope } from "../../support/triage-daemon.ts";

const triage = triageScope();
const HOUR = 3_600_000;

const watcher = (extra: string[], options: { now?: () => number } = {}) =>
  startTriageWatcher(
    triage.daemon,
    triage.kubeconfig,
    ["--backoff-min-count=1", "--sources=cluster-events", ...extra],
    options,
  );

function gauge(text: string, name: string): number {
  const line = text.split("\n").find((candidate) => candidate.startsWith(`watcher_${name}{`));
  return Number(line?.split(" ").at(-1) ?? Number.NaN);
}

describe("graph snapshot (D425)", () => {
  test("a restarted watcher correlates a storm from its snapshot while the pods list still fails", async () => {
    const store = join(triage.dir, "snapshot.db");
    // Five pods on one node, each in its own namespace: only the node ties them together.
    const pods = Array.from({ length: 5 }, (_, i) =>
      triage.api.scenario.createPod({
        namespace: `snap-${i}`,
        name: `worker-${i}`,
        node: "node-snap",
        containers: [
          { name: "app", image: "registry.example.com/app:v1", waitingReason: "CrashLoopBackOff", restartCount: 4 },
        ],
      } as never),
    );
    const first = await watcher(["--storm=on", `--store=${store}`]);
    await first.running.stop();
    expect(first.log.join("\n")).toContain("store: graph snapshot written");
    triage.api.faults.failNext({ code: 503, path: "/api/v1/pods", verb: "list", count: 10_000 });
    const second = await watcher(["--storm=on", "--storm-min=3", `--store=${store}`]);
    try {
      expect(second.log.join("\n")).toMatch(/graph snapshot restored \(\d+ objects/);
      for (const [i, pod] of pods.entries())
        triage.api.scenario.recordEvent({
          involvedObject: pod,
          reason: "BackOff",
          message: "Back-off restarting failed container app in pod",
          type: "Warning",
          source: { component: "kubelet", host: "node-snap" },
          fieldPath: "spec.containers{app}",
          lastTimestamp: new Date(Date.now() + i).toISOString(),
        });
      await waitFor(
        () => second.log.find((line) => line.includes("storm formed on Node node-snap")),
        10_000,
        "storm formed",
      );
      // The pods watch never listed: the storm came from the snapshot alone.
      expect(second.running.degraded().join("\n")).toContain("optional watch pods not synced");
    } finally {
      triage.api.faults.clear();
      await second.running.stop();
    }
  }, 45_000);
});

describe("graph tombstones (D426)", () => {
  test("under pod churn the deleted pods' tombstones are pruned 2 h after their deletion", async () => {
    let clock = Date.now();
    const { running } = await watcher(["--storm=on"], { now: () => clock });
    const churn = async (round: number, count: number) => {
      for (let i = 0; i < count; i++) {
        const name = `churn-${round}-${i}`;
        triage.api.scenario.createPod({ namespace: "churn", name, node: "node-churn" } as never);
        triage.api.scenario.delete({ apiVersion: "v1", kind: "Pod", namespace: "churn", name });
      }
    };
    try {
      const tombstones = () => gauge(running.metrics.render(), "graph_tombstones");
      await churn(0, 150);
      await waitFor(() => (tombstones() === 150 ? true : undefined), 10_000, "150 tombstones");
      clock += HOUR;
      await churn(1, 100);
      await waitFor(() => (tombstones() === 250 ? true : undefined), 10_000, "250 tombstones");
      // Past 2 h of the first round, inside it for the second: the first round goes on the next deletion.
      clock += HOUR + 60_000;
      await churn(2, 50);
      await waitFor(() => (tombstones() === 150 ? true : undefined), 10_000, "first round pruned");
      clock += 2 * HOUR;
      await churn(3, 1);
      await waitFor(() => (tombstones() === 1 ? true : undefined), 10_000, "all but the newest pruned");
    } finally {
      await running.stop();
    }
  }, 60_000);
});

describe("store bounds and distillation defaults (D424, D427)", () => {
  test("a burst stays under --store-max-mb, and with the default --distill-interval the facts count every row the bound dropped", async () => {
    const path = join(triage.dir, "bounded.db");
    const { running } = await watcher(["--storm=off", `--store=${path}`, "--store-max-mb=1"]);
    const signal = (i: number): Signal => ({
      kind: "cluster-event",
      reason: "BackOff",
      namespace: "burst",
      kindOfObject: "Pod",
      name: `api-7b9d5c8f4-${"bcdfg"}`,
      uid: `uid-${i}`,
      message: `Back-off restarting failed container ${"x".repeat(120)} ${i}`,
      eventCount: 1,
      firstSeen: Date.now(),
      lastSeen: Date.now(),
      type: "Warning",
      // Info: stored, never paged (D393), so the burst costs the daemon nothing.
      severity: "info",
    });
    let most = 0;
    try {
      for (let i = 0; i < 30_000; i++) {
        void running.dispatcher.dispatch(signal(i));
        if (i % 5000 === 4999) {
          await running.dispatcher.idle();
          // The file and its write-ahead log: the store's whole footprint on disk.
          most = Math.max(most, statSync(path).size + (statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0));
        }
      }
      await running.dispatcher.idle();
    } finally {
      await running.stop();
    }
    expect(most).toBeLessThanOrEqual(1024 * 1024 + 256 * 1024);
    expect(statSync(path).size).toBeLessThanOrEqual(1024 * 1024 + 256 * 1024);
    const reopened = new OccurrenceStore({ path, maxBytes: 1024 * 1024, ttlMs: 720 * HOUR });
    try {
      expect(reopened.count()).toBeGreaterThan(0);
      expect(reopened.count()).toBeLessThan(30_000);
      // The size bound distilled what it dropped; the rows still in the store are distilled by the
      // next run (the watermark is in the file), here run by hand.
      const pending = reopened.memory.pending();
      expect(reopened.memory.distill().rows).toBe(pending);
      const [fact] = reopened.memory.facts();
      expect(fact).toMatchObject({
        kind: "cluster-event",
        reason: "BackOff",
        namespace: "burst",
        workload: "Deployment/api",
        severity: "info",
        occurrences: 30_000,
        routes: { "info-stored": 30_000 },
      });
    } finally {
      reopened.close();
    }
  }, 60_000);

  test("--distill-interval and --graph-snapshot-interval are read: facts and a snapshot appear on their timers while running", async () => {
    const path = join(triage.dir, "timers.db");
    const { running, log } = await watcher([
      "--storm=on",
      `--store=${path}`,
      "--distill-interval=100ms",
      "--graph-snapshot-interval=100ms",
    ]);
    const reader = new OccurrenceStore({ path, maxBytes: 64 << 20, ttlMs: 720 * HOUR });
    try {
      const info: Signal = {
        kind: "cluster-event",
        reason: "BackOff",
        namespace: "timers",
        kindOfObject: "Pod",
        name: "timer-1",
        uid: "uid-timer-1",
        message: "Back-off restarting failed container",
        eventCount: 1,
        firstSeen: Date.now(),
        lastSeen: Date.now(),
        type: "Warning",
        severity: "info",
      };
      await running.dispatcher.dispatch(info);
      await waitFor(() => log.find((line) => line.includes("store: graph snapshot written")), 10_000, "snapshot timer");
      await waitFor(() => (reader.memory.facts().length > 0 ? true : undefined), 10_000, "distill timer");
      expect(reader.memory.facts()[0]).toMatchObject({ namespace: "timers", occurrences: 1, class: "open" });
      expect(reader.memory.loadGraph()).toHaveProperty("pods");
    } finally {
      reader.close();
      await running.stop();
    }
  }, 30_000);

  test("defaults without flags: distillation every 6 h, graph snapshots every 5 m; explicit settings need --store", () => {
    const base = ["--dry-run"];
    const config = watcherConfigFromArgv(base);
    expect(config.ok && config.value.distillIntervalMs).toBe(6 * HOUR);
    expect(config.ok && config.value.graphSnapshotIntervalMs).toBe(5 * 60_000);
    expect(watcherConfigFromArgv([...base, "--distill-interval=1h"])).toMatchObject({
      ok: false,
      error: expect.stringContaining("--distill-interval needs --store"),
    });
    expect(watcherConfigFromArgv([...base, "--distill-interval=0"]).ok).toBe(true);
    expect(watcherConfigFromArgv([...base, "--graph-snapshot-interval=1m"])).toMatchObject({
      ok: false,
      error: expect.stringContaining("needs --store"),
    });
    expect(
      watcherConfigFromArgv([...base, "--store=/tmp/x.db", "--storm=off", "--graph-snapshot-interval=1m"]),
    ).toMatchObject({ ok: false, error: expect.stringContaining("needs storm correlation on") });
  });
});
