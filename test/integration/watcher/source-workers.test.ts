/**
 * Sources in worker threads (D413), the default users get: a watcher started with no thread
 * option runs each source in its own worker; one killed mid-run is replaced with backoff, counted
 * in watcher_source_restarts_total and named in /readyz's source lines, and the other sources
 * never stop (an event recorded while it is down still arrives). Then the host alone, with
 * stand-in workers: a worker whose event loop stops is replaced after the liveness window, and
 * one that crashes at every start is retried with a doubling backoff.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { SourceThread } from "../../../src/watcher/sources/source-thread.ts";
import { type RunningWatcher, startWatcher } from "../../../src/watcher/watch-runner.ts";
import { tempDir, waitFor } from "../../support/daemon.ts";
import { writeKubeconfig } from "../../support/kube.ts";

let api: FakeApiserver;
let running: RunningWatcher;
const log: string[] = [];
let stdout = "";

beforeAll(async () => {
  api = await startFakeApiserver({});
  api.scenario.createNode({ name: "sw-n1" });
  api.scenario.createPod({
    namespace: "shop",
    name: "sw-p1",
    node: "sw-n1",
    containers: [{ name: "app", waitingReason: "CrashLoopBackOff", restartCount: 3 }],
  } as never);
  const kubeconfig = writeKubeconfig(join(tempDir(), "kubeconfig"), { server: api.url });
  const config = watcherConfigFromArgv([
    "--dry-run",
    `--kubeconfig=${kubeconfig}`,
    "--cluster-name=kind-test",
    "--sources=cluster-events,object-state,rollout",
    "--storm=off",
    "--recovery-stable-for=0",
  ]);
  if (!config.ok) throw new Error(config.error);
  running = await startWatcher(
    config.value,
    createLogger("info", (line) => log.push(line)),
    { stdout: (text) => (stdout += text) },
  );
  await waitFor(() => (running.ready() ? true : undefined), 10_000, "ready");
});
afterAll(async () => {
  await running.stop();
  await api.stop();
});

function recordCrash(name: string) {
  const pod = api.scenario.get({ apiVersion: "v1", kind: "Pod", namespace: "shop", name: "sw-p1" });
  api.scenario.recordEvent({
    involvedObject: pod as Record<string, unknown>,
    reason: "BackOff",
    message: `Back-off restarting failed container ${name}`,
    type: "Warning",
    source: { host: "sw-n1" },
    fieldPath: "spec.containers{app}",
    count: 5,
  });
}

describe("the default: each source in its own worker", () => {
  test("every source is a worker, named with its state", () => {
    expect(running.sources()).toEqual([
      { name: "cluster-events", state: "ready" },
      { name: "object-state", state: "ready" },
      { name: "rollout", state: "ready" },
    ]);
    expect(running.killSource("no-such-source")).toBe(false);
  });

  test("object-state killed mid-run: replaced and counted; cluster-events never stops; the new worker fires", async () => {
    expect(running.killSource("object-state")).toBe(true);
    // Down now: not ready, and /readyz's line says why.
    expect(running.ready()).toBe(false);
    expect(running.sources()[1]).toEqual({
      name: "object-state",
      state: "restarting (worker restarted 1×): worker lost: killed",
    });
    recordCrash("while-down");
    await waitFor(() => (stdout.includes("while-down") ? true : undefined), 10_000, "the event through cluster-events");
    await waitFor(() => (running.ready() ? true : undefined), 10_000, "object-state back");
    expect(running.sources()[1]).toEqual({ name: "object-state", state: "ready (worker restarted 1×)" });
    expect(running.sources()[0]).toEqual({ name: "cluster-events", state: "ready" });
    expect(running.metrics.render()).toMatch(
      /watcher_source_restarts_total\{cluster="kind-test",source="object-state"\} 1\n/,
    );
    expect(log.filter((line) => line.includes("source object-state: worker lost (killed)"))).toHaveLength(1);
    // The replacement listed again (arm after sync: nothing re-fired) and judges what changes now.
    expect(stdout).not.toContain("NodeNotReady");
    api.scenario.updateNode({ name: "sw-n1", ready: "False" });
    await waitFor(() => (stdout.includes('"node_notready"') ? true : undefined), 10_000, "node_notready");
  });
});

describe("the host: lost workers are replaced", () => {
  const context = (lines: string[]) => ({
    values: new Map(),
    env: {},
    connection: { server: "http://127.0.0.1:1", tls: {}, token: () => undefined },
    without: new Set<string>(),
    emit: () => {},
    logger: createLogger("info", (line) => lines.push(line)),
    onRestart: () => {},
  });

  test("a worker whose event loop stops is replaced once the liveness window passes", async () => {
    const lines: string[] = [];
    const crashes: string[] = [];
    const thread = new SourceThread("stuck", context(lines), {
      workerFactory: () => new Worker(join(import.meta.dir, "../../fixtures/stuck-source-worker.ts")),
      unresponsiveMs: 300,
      onCrash: (source) => crashes.push(source),
    });
    await thread.start();
    try {
      await waitFor(() => (crashes.length >= 1 ? true : undefined), 10_000, "the stuck worker replaced");
      expect(crashes[0]).toBe("stuck");
      expect(lines.find((line) => line.includes("source stuck: worker lost"))).toContain("did not answer for");
    } finally {
      await thread.stop();
    }
  });

  test("a worker that crashes at every start is retried with a doubling backoff", async () => {
    const lines: string[] = [];
    const at: number[] = [];
    const thread = new SourceThread("broken", context(lines), {
      workerFactory: () => new Worker(join(import.meta.dir, "../../fixtures/crashing-source-worker.ts")),
      onCrash: () => at.push(performance.now()),
    });
    await thread.start();
    try {
      await waitFor(() => (at.length >= 3 ? true : undefined), 10_000, "three crashes");
      const [first = 0, second = 0, third = 0] = at;
      // 500 ms before the second worker, 1000 ms before the third (plus each worker's start).
      expect(second - first).toBeGreaterThanOrEqual(480);
      expect(third - second).toBeGreaterThanOrEqual(980);
      expect(lines[0]).toContain("source broken: worker lost (");
      expect(lines[0]).toContain("broke");
      expect(lines[1]).toContain("restarting in 1000 ms (restart 2)");
      expect(thread.state).toBe("restarting");
    } finally {
      await thread.stop();
    }
    expect(thread.state).toBe("stopped");
  });
});
