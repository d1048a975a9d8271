/**
 * Source clearance end to end (D437-D438), the watcher with its sources in workers (the default)
 * against the fake apiserver, dry-run so every payload and its session show on stdout: a rollout
 * stall opens an incident; its worker killed meanwhile is replaced and pages again without the
 * incident being resolved; once the rollout completes, `resolved` follows into the same session.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { type RunningWatcher, startWatcher } from "../../../src/watcher/watch-runner.ts";
import { tempDir, waitFor } from "../../support/daemon.ts";
import { writeKubeconfig } from "../../support/kube.ts";

let api: FakeApiserver;
let running: RunningWatcher;
let stdout = "";
const log: string[] = [];
let deploymentUid = "";

function replicaSet(name: string, revision: number, desired: number, ready: number) {
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

/** Every dry-run payload so far, with the session it went to. */
function payloads(): Array<{ session: string; payload: Record<string, unknown> }> {
  const blocks = stdout.split(/^--- dry-run payload for session ("[^"]*") ---\n/m).slice(1);
  const out: Array<{ session: string; payload: Record<string, unknown> }> = [];
  for (let index = 0; index + 1 < blocks.length; index += 2)
    out.push({ session: JSON.parse(blocks[index] ?? '""'), payload: JSON.parse(blocks[index + 1] ?? "{}") });
  return out;
}

beforeAll(async () => {
  api = await startFakeApiserver({});
  const deployment = api.scenario.create({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: "shop" },
  });
  deploymentUid = String((deployment.metadata as { uid: string }).uid);
  api.scenario.create(replicaSet("web-1", 1, 10, 10));
  const kubeconfig = writeKubeconfig(join(tempDir(), "kubeconfig"), { server: api.url });
  const config = watcherConfigFromArgv([
    "--dry-run",
    `--kubeconfig=${kubeconfig}`,
    "--cluster-name=kind-test",
    "--sources=cluster-events,rollout",
    "--storm=off",
    "--recovery-stable-for=1s",
    "--rollout-observe=1s",
  ]);
  if (!config.ok) throw new Error(config.error);
  running = await startWatcher(
    config.value,
    createLogger("info", (line) => log.push(line)),
    { stdout: (text) => (stdout += text), recoveryTickMs: 100 },
  );
  await waitFor(() => (running.ready() ? true : undefined), 10_000, "ready");
});
afterAll(async () => {
  await running.stop();
  await api.stop();
});

test("a rollout stall is resolved into its session once the rollout completes; a killed worker resolves nothing", async () => {
  api.scenario.create(replicaSet("web-2", 2, 3, 0));
  const opened = await waitFor(
    () => payloads().find(({ payload }) => payload.kind === "rollout.stall"),
    10_000,
    "rollout.stall",
  );
  expect(opened.payload).toMatchObject({ reason: "rollout_stall", uid: deploymentUid, kind_of_object: "Deployment" });
  const key = `${deploymentUid}|rollout_stall`;

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
  api.scenario.update(replicaSet("web-2", 2, 3, 3));
  api.scenario.update(replicaSet("web-1", 1, 0, 0));
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
    uid: deploymentUid,
    kind_of_object: "Deployment",
    name: "web",
    namespace: "shop",
    resolution: "recovered",
  });
}, 30_000);
