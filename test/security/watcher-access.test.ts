/**
 * The watcher under a narrow role (regression cases of the issue-13 probe, run with the triage
 * recipe's pins `--sources=cluster-events --storm=off`): a role without replicasets causes no
 * false `sentinel.access_revoked` page and does not hold readiness; a role without `watch pods`
 * turns recovery off once, loudly, and never lists pods; an optional watch the apiserver keeps
 * refusing although its review allowed it is named in /readyz's body while /readyz answers 200.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Grant } from "../../scripts/fake-apiserver/access.ts";
import { type FakeApiserver, startFakeApiserver } from "../../scripts/fake-apiserver/server.ts";
import { watcherConfigFromArgv } from "../../src/cli/watcher-config.ts";
import { createLogger } from "../../src/telemetry/logger.ts";
import { type RunningWatcher, startWatcher } from "../../src/watcher/watch-runner.ts";
import { MAIN, REPO_ROOT, tempDir, waitFor } from "../support/daemon.ts";
import { writeKubeconfig } from "../support/kube.ts";

let api: FakeApiserver;
let kubeconfig: string;

const READ = ["get", "list", "watch"];
const REVIEWS: Grant = {
  verbs: ["create"],
  resources: ["selfsubjectaccessreviews"],
  apiGroups: ["authorization.k8s.io"],
};
/** The probe's role: events and pods readable, no replicasets, no nodes. */
const WITHOUT_REPLICASETS: Grant[] = [{ verbs: READ, resources: ["events", "pods"], apiGroups: [""] }, REVIEWS];
/** The triage recipe's role: pods get and list only (no watch). */
const RECIPE_ROLE: Grant[] = [
  { verbs: READ, resources: ["events"], apiGroups: [""] },
  { verbs: ["get", "list"], resources: ["pods"], apiGroups: [""] },
  REVIEWS,
];

beforeAll(async () => {
  api = await startFakeApiserver({ tokens: { "kube-token": "system:serviceaccount:agent-triage:watcher" } });
  kubeconfig = writeKubeconfig(join(tempDir(), "kubeconfig"), { server: api.url, token: "kube-token" });
});

afterAll(async () => {
  await api.stop();
});

async function recipeWatcher(...extra: string[]) {
  const parsed = watcherConfigFromArgv([
    "--dry-run",
    `--kubeconfig=${kubeconfig}`,
    "--cluster-name=probe",
    "--sources=cluster-events",
    "--storm=off",
    "--backoff-min-count=1",
    // Warnings go to the watchboard (D418): a digest per warning, printed at once.
    "--watchboard-batch=1",
    ...extra,
  ]);
  if (!parsed.ok) throw new Error(parsed.error);
  const log: string[] = [];
  const printed: string[] = [];
  const running = await startWatcher(
    parsed.value,
    createLogger("debug", (line) => log.push(line)),
    { stdout: (text) => printed.push(text) },
  );
  return { running, log, printed };
}

/** Access re-check reviews so far, every outcome: a sweep counts all its answers at once. */
function reviews(running: RunningWatcher): number {
  return [...running.metrics.render().matchAll(/^watcher_access_rechecks_total\{[^}]*\} (\d+)/gm)].reduce(
    (sum, [, value]) => sum + Number(value),
    0,
  );
}

/**
 * Wait until `sweeps` whole access sweeps have run from now: sweeps never overlap, so once the
 * one after them has counted its answers they are done, their verdicts printed and logged.
 */
async function sweepsPassed(running: RunningWatcher, sweeps: number): Promise<void> {
  const start = reviews(running);
  // One sweep's answers (or more, if two ran before the first look): a lower bound is all it takes.
  const perSweep = await waitFor(
    () => (reviews(running) > start ? reviews(running) - start : undefined),
    8000,
    "an access sweep",
  );
  await waitFor(
    () => (reviews(running) >= start + perSweep * (sweeps + 1) ? true : undefined),
    8000,
    `${sweeps} more access sweeps`,
  );
}

const pages = (printed: string[]) => printed.filter((text) => text.includes('"kind": "sentinel.access_revoked"'));

describe("a role without replicasets (--sources=cluster-events --storm=off)", () => {
  test("readiness is reached and no permission that was never granted is reported revoked", async () => {
    api.scenario.setGrants(WITHOUT_REPLICASETS);
    api.clearRequests();
    const { running, log, printed } = await recipeWatcher("--access-recheck=100ms");
    try {
      await waitFor(() => (running.ready() ? true : undefined), 8000, "ready with recovery watching pods only");
      // Past two consecutive sweeps: the old sweeper paged here about replicasets and nodes.
      await sweepsPassed(running, 3);
      expect(pages(printed)).toEqual([]);
      expect(log.filter((line) => line.includes("access re-check: permission"))).toEqual([]);
      expect(api.requests().filter((request) => request.path.includes("replicasets"))).toEqual([]);
      expect(api.requests().some((request) => request.path === "/api/v1/pods" && request.query.watch === "true")).toBe(
        true,
      );
      expect(running.degraded()).toEqual([]);
    } finally {
      api.scenario.setGrants(undefined);
      await running.stop();
    }
  }, 20_000);

  test("a grant held at startup and revoked later is still reported (warning, once)", async () => {
    api.scenario.setGrants(WITHOUT_REPLICASETS);
    const { running, printed } = await recipeWatcher("--access-recheck=100ms");
    try {
      await waitFor(() => (running.ready() ? true : undefined), 8000, "ready");
      api.scenario.setGrants([{ verbs: READ, resources: ["events"], apiGroups: [""] }, REVIEWS]);
      await waitFor(() => (pages(printed).length >= 2 ? true : undefined), 8000, "the pods revocations");
      // Two more whole sweeps still denied: a repeated page would be printed by now.
      await sweepsPassed(running, 2);
      const names = pages(printed)
        .map((text) => /"name": "([^"]+)"/.exec(text)?.[1])
        .sort();
      expect(names).toEqual(["list pods cluster-wide", "watch pods cluster-wide"]);
      expect(pages(printed).every((text) => text.includes('"severity": "warning"'))).toBe(true);
      expect(running.ready()).toBe(true);
    } finally {
      api.scenario.setGrants(undefined);
      await running.stop();
    }
  }, 20_000);
});

describe("a role without watch on pods (the triage recipe's role)", () => {
  test("recovery: DISABLED is logged once with the missing grant, pods are never listed, readiness is reached, no page", async () => {
    api.scenario.setGrants(RECIPE_ROLE);
    api.clearRequests();
    const { running, log, printed } = await recipeWatcher("--access-recheck=100ms");
    try {
      await waitFor(() => (running.ready() ? true : undefined), 8000, "ready without recovery");
      // Past two consecutive sweeps: a repeated DISABLED line or a page would be there by now.
      await sweepsPassed(running, 3);
      const disabled = log.filter((line) => line.includes("recovery: DISABLED"));
      expect(disabled).toHaveLength(1);
      expect(disabled[0]).toContain('"watch pods cluster-wide"');
      expect(api.requests().filter((request) => request.path === "/api/v1/pods")).toEqual([]);
      expect(pages(printed)).toEqual([]);
    } finally {
      api.scenario.setGrants(undefined);
      await running.stop();
    }
  }, 20_000);
});

describe("an optional watch that keeps failing", () => {
  test("/readyz answers 200 once the events watch synced and names the failing pods watch in its body", async () => {
    api.scenario.setGrants(undefined);
    // The review says yes; the list itself is refused every time (an authorizer that disagrees).
    api.faults.failNext({
      code: 403,
      path: "/api/v1/pods",
      verb: "list",
      count: 10_000,
      message: "pods is forbidden: admission says no",
    });
    const child = Bun.spawn(
      [
        process.execPath,
        MAIN,
        "watcher",
        "watch",
        "--dry-run",
        `--kubeconfig=${kubeconfig}`,
        "--cluster-name=probe",
        "--sources=cluster-events",
        "--storm=off",
        "--metrics-addr=127.0.0.1:0",
      ],
      { cwd: REPO_ROOT, stdin: "ignore", stdout: "ignore", stderr: "pipe" },
    );
    let stderr = "";
    void (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of child.stderr as unknown as AsyncIterable<Uint8Array>)
        stderr += decoder.decode(chunk, { stream: true });
    })().catch(() => undefined);
    try {
      const base = await waitFor(() => /metrics listening on (http:\/\/\S+)/.exec(stderr)?.[1], 15_000, "metrics line");
      const ready = await waitFor(
        async () => {
          const response = await fetch(`${base}/readyz`);
          return response.status === 200 ? response.text() : undefined;
        },
        10_000,
        "readyz 200 although the pods watch fails",
      );
      expect(ready).toStartWith("ok\n");
      expect(ready).toContain("optional watch pods");
      expect(ready).toContain("admission says no");
    } finally {
      api.faults.clear();
      child.kill("SIGKILL");
      await child.exited;
    }
  }, 30_000);
});
