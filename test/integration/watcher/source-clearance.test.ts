/**
 * Source clearance end to end (D437-D438), the watcher with its sources in workers (the default)
 * against the fake apiserver, dry-run so every payload and its session show on stdout: a rollout
 * stall opens an incident; its worker killed meanwhile is replaced and pages again without the
 * incident being resolved; once the rollout completes, `resolved` follows into the same session.
 * The same with the sources on the main thread (`sourceThreads: "main"`): a failed Job's incident
 * is resolved (`object_deleted`) once the Job is deleted.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { type RunningWatcher, startWatcher } from "../../../src/watcher/watch-runner.ts";
import { tempDir, waitFor } from "../../support/daemon.ts";
import { writeKubeconfig } from "../../support/kube.ts";

interface DryRun {
  running: RunningWatcher;
  /** Every dry-run payload so far, with the session it went to. */
  payloads(): Array<{ session: string; payload: Record<string, unknown> }>;
}

let api: FakeApiserver;
let kubeconfig = "";
const watchers: RunningWatcher[] = [];

/** A dry-run watcher on the fake apiserver, recovery on a 1s window, its stdout kept. */
async function startDryRun(extra: string[], options: { sourceThreads?: "main" } = {}): Promise<DryRun> {
  const config = watcherConfigFromArgv([
    "--dry-run",
    `--kubeconfig=${kubeconfig}`,
    "--cluster-name=kind-test",
    "--storm=off",
    "--recovery-stable-for=1s",
    // Critical, so each incident opens its own session (a warning would go to the watchboard, D418).
    "--severity=rollout.stall=critical,workload.job_failed=critical",
    ...extra,
  ]);
  if (!config.ok) throw new Error(config.error);
  let stdout = "";
  const running = await startWatcher(config.value, createLogger("error"), {
    stdout: (text) => (stdout += text),
    recoveryTickMs: 100,
    ...options,
  });
  watchers.push(running);
  await waitFor(() => (running.ready() ? true : undefined), 10_000, "ready");
  return {
    running,
    payloads: () => {
      const blocks = stdout.split(/^--- dry-run payload for session ("[^"]*") ---\n/m).slice(1);
      const out: Array<{ session: string; payload: Record<string, unknown> }> = [];
      for (let index = 0; index + 1 < blocks.length; index += 2)
        out.push({ session: JSON.parse(blocks[index] ?? '""'), payload: JSON.parse(blocks[index + 1] ?? "{}") });
      return out;
    },
  };
}

beforeAll(async () => {
  api = await startFakeApiserver({});
  kubeconfig = writeKubeconfig(join(tempDir(), "kubeconfig"), { server: api.url });
});
afterAll(async () => {
  for (const running of watchers) await running.stop();
  await api.stop();
});

function replicaSet(deploymentUid: string, name: string, revision: number, desired: number, ready: number) {
  return {
    apiVersion: "apps/v1",
    kind: "ReplicaSet",
    metadata: {
      name,
      namespace: "shop",
      annotations: { "deployment.kubernetes.io/revision": String(revision) },
      ownerReferences: [
        { apiVersion: "apps/v1", kind: "Deployment", name: "web", uid: deploymentUid, controller: true },
      ],
    },
    spec: { replicas: desired },
    status: { readyReplicas: ready },
  };
}

test("a rollout stall is resolved into its session once the rollout completes; a killed worker resolves nothing", async () => {
  const deployment = api.scenario.create({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: "shop" },
  });
  const uid = String((deployment.metadata as { uid: string }).uid);
  api.scenario.create(replicaSet(uid, "web-1", 1, 10, 10));
  const { running, payloads } = await startDryRun(["--sources=cluster-events,rollout", "--rollout-observe=1s"]);
  api.scenario.create(replicaSet(uid, "web-2", 2, 3, 0));
  const opened = await waitFor(
    () => payloads().find(({ payload }) => payload.kind === "rollout.stall"),
    10_000,
    "rollout.stall",
  );
  expect(opened.payload).toMatchObject({ reason: "rollout_stall", uid, kind_of_object: "Deployment" });
  const key = `${uid}|rollout_stall`;

  // The worker dies while the stall holds: its replacement lists again and knows nothing of the
  // stall until it judges it again (it pages again: the same incident counts it), and nothing in
  // between resolves the incident, though far more than the stable window passes.
  expect(running.killSource("rollout")).toBe(true);
  await waitFor(() => (running.ready() ? true : undefined), 10_000, "rollout worker back");
  await waitFor(() => ((running.dispatcher.dedup.get(key)?.count ?? 0) >= 2 ? true : undefined), 10_000, "re-paged");
  await running.dispatcher.sweepRecovery();
  await running.dispatcher.idle();
  expect(payloads().filter(({ payload }) => payload.kind === "resolved")).toEqual([]);
  expect(payloads().filter(({ payload }) => payload.kind === "rollout.stall")).toHaveLength(1);

  // The rollout completes: the new worker saw the stall open, so it reports it cleared, and after
  // the stable window `resolved` goes to the incident's session.
  api.scenario.update(replicaSet(uid, "web-2", 2, 3, 3));
  api.scenario.update(replicaSet(uid, "web-1", 1, 0, 0));
  const clearedAt = Date.now();
  const resolved = await waitFor(
    () => payloads().find(({ payload }) => payload.kind === "resolved"),
    10_000,
    "resolved",
  );
  expect(Date.now() - clearedAt).toBeGreaterThanOrEqual(900);
  expect(resolved.session).toBe(opened.session);
  expect(resolved.payload).toMatchObject({
    reason: "rollout_stall",
    uid,
    kind_of_object: "Deployment",
    name: "web",
    namespace: "shop",
    resolution: "recovered",
  });
}, 30_000);

test("on the main thread: a failed Job's incident is resolved (object_deleted) into its session once the Job is deleted", async () => {
  const { payloads } = await startDryRun(["--sources=cluster-events,workload"], { sourceThreads: "main" });
  const job = api.scenario.create({
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name: "once", namespace: "batch" },
    status: {},
  });
  const ref = { apiVersion: "batch/v1", kind: "Job", namespace: "batch", name: "once" };
  api.scenario.patch(ref, {
    status: { conditions: [{ type: "Failed", status: "True", reason: "BackoffLimitExceeded" }] },
  });
  const opened = await waitFor(
    () => payloads().find(({ payload }) => payload.kind === "workload.job_failed"),
    10_000,
    "job_failed",
  );
  api.scenario.delete(ref);
  const resolved = await waitFor(
    () => payloads().find(({ payload }) => payload.kind === "resolved"),
    10_000,
    "resolved",
  );
  expect(resolved.session).toBe(opened.session);
  expect(resolved.payload).toMatchObject({
    reason: "job_failed",
    uid: String((job.metadata as { uid: string }).uid),
    kind_of_object: "Job",
    name: "once",
    resolution: "object_deleted",
  });
}, 30_000);
