/**
 * `spar watcher watch` as a process against the fake kube-apiserver: the --metrics-addr listener
 * (/healthz always ok, /readyz 503 until every watch has synced then 200, /metrics with the
 * `watcher_` series), the --store occurrence rows, and SIGTERM draining and persisting the dedup
 * cache (with --snapshot-interval=0 the file appears only at shutdown) before exiting 0.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { OccurrenceStore } from "../../../src/watcher/occurrence-store.ts";
import { MAIN, REPO_ROOT, tempDir, waitFor } from "../../support/daemon.ts";
import { writeKubeconfig } from "../../support/kube.ts";
import { rawHttp } from "../../support/raw-http.ts";

let api: FakeApiserver;
let dir: string;

beforeAll(async () => {
  dir = tempDir();
  api = await startFakeApiserver({ tokens: { "kube-token": "watcher" } });
});

afterAll(async () => {
  await api.stop();
});

async function drain(stream: ReadableStream<Uint8Array>, append: (text: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  try {
    for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>)
      append(decoder.decode(chunk, { stream: true }));
  } catch {
    // the process is gone
  }
}

test("metrics listener, readiness after the watches sync, the store, and SIGTERM persisting the dedup cache", async () => {
  const kubeconfig = writeKubeconfig(join(dir, "kubeconfig"), { server: api.url, token: "kube-token" });
  const dedupPath = join(dir, "state", "dedup.json");
  const storePath = join(dir, "state", "occurrences.db");
  // The first two lists of events fail: the informer backs off (1 s, then 2 s) and /readyz says not ready meanwhile.
  api.faults.failNext({ code: 503, path: "/api/v1/events", verb: "list", count: 2 });
  const child = Bun.spawn(
    [
      process.execPath,
      MAIN,
      "watcher",
      "watch",
      "--dry-run",
      `--kubeconfig=${kubeconfig}`,
      "--cluster-name=proc",
      // Only the events watch: the failed lists below are about its readiness (ingress lists events too).
      "--sources=cluster-events",
      "--storm=off",
      "--recovery-stable-for=0",
      "--backoff-min-count=1",
      "--metrics-addr=127.0.0.1:0",
      `--dedup-persist=${dedupPath}`,
      "--snapshot-interval=0",
      `--store=${storePath}`,
    ],
    { cwd: REPO_ROOT, stdin: "ignore", stdout: "pipe", stderr: "pipe" },
  );
  let stdout = "";
  let stderr = "";
  void drain(child.stdout, (text) => {
    stdout += text;
  });
  void drain(child.stderr, (text) => {
    stderr += text;
  });
  try {
    const base = await waitFor(
      () => /metrics listening on (http:\/\/\S+)/.exec(stderr)?.[1],
      15_000,
      `metrics line; stderr=${stderr}`,
    );
    const healthz = await fetch(`${base}/healthz`);
    expect([healthz.status, await healthz.text()]).toEqual([200, "ok\n"]);
    // An HTTP/1.0 probe that sends no Host (HAProxy's default httpchk) gets the same answer.
    const bareProbe = await rawHttp(Number(new URL(base).port), "GET /healthz HTTP/1.0\r\n\r\n");
    expect([bareProbe.status, bareProbe.body]).toEqual([200, "ok\n"]);
    const notReady = await fetch(`${base}/readyz`);
    // The verdict, then every source and its state (D413): the events list fails, so it is not ready yet.
    const notReadyBody = await notReady.text();
    expect(notReady.status).toBe(503);
    expect(notReadyBody).toMatch(
      /^not ready: informer caches syncing\nsource cluster-events: (syncing|failing: .*503.*)\n$/,
    );
    const readyBody = await waitFor(
      async () => {
        const response = await fetch(`${base}/readyz`);
        return response.status === 200 ? response.text() : undefined;
      },
      10_000,
      "readyz 200",
    );
    expect(readyBody).toBe("ok\nsource cluster-events: ready\n");
    expect(stderr).toContain("cluster-events: watch failed");

    const pod = api.scenario.createPod({
      namespace: "billing",
      name: "invoicer-1",
      node: "node-a",
      containers: [{ name: "app", waitingReason: "CrashLoopBackOff", restartCount: 3 }],
    } as never);
    api.scenario.recordEvent({
      involvedObject: pod,
      reason: "BackOff",
      message: "Back-off restarting failed container app in pod",
      type: "Warning",
      source: { host: "node-a" },
      fieldPath: "spec.containers{app}",
    });
    await waitFor(
      () => (stdout.includes("--- dry-run payload for session") ? true : undefined),
      10_000,
      "dry-run payload",
    );
    expect(stdout).toContain('"name": "invoicer-1"');
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toContain('watcher_events_injected_total{cluster="proc",namespace="billing",reason="BackOff"} 1');
    expect(metrics).toContain('watcher_active_incidents{cluster="proc"} 1');
    expect(metrics).toMatch(/watcher_runner_restarts_total\{cluster="proc"\} [1-9]/);
    // Issue 32 item 6: the runner, the sink, and the incident's enrichment bundle (D434, D435).
    expect(metrics).toContain('watcher_runner_up{cluster="proc"} 1');
    expect(metrics).toContain('watcher_sink_info{cluster="proc",sink="daemon"} 1');
    expect(metrics).toMatch(/watcher_enrichments_total\{cluster="proc",outcome="(ok|partial)"\} 1/);
    expect(metrics).toContain('watcher_enrichment_bytes_count{cluster="proc"} 1');
    expect(metrics).toMatch(/watcher_enrichment_bytes_bucket\{cluster="proc",le="\+Inf"\} 1/);
    expect((await fetch(`${base}/nope`)).status).toBe(404);
    expect(existsSync(dedupPath)).toBe(false);

    child.kill("SIGTERM");
    expect(await child.exited).toBe(0);
    expect(stderr).toContain("SIGTERM: draining and persisting the dedup cache");
    const uid = String((pod.metadata as { uid: string }).uid);
    const persisted = JSON.parse(readFileSync(dedupPath, "utf8")) as { entries?: Record<string, unknown> } & Record<
      string,
      unknown
    >;
    expect(JSON.stringify(persisted)).toContain(`${uid}|CrashLoopBackOff`);
    const store = new OccurrenceStore({ path: storePath, maxBytes: 1 << 20, ttlMs: 3_600_000 });
    try {
      expect(store.rows().map((row) => `${row.route}:${row.namespace}/${row.name}:${row.cluster}`)).toEqual([
        "injected:billing/invoicer-1:proc",
      ]);
    } finally {
      store.close();
    }
  } finally {
    child.kill("SIGKILL");
    await child.exited;
  }
}, 40_000);

test("startup failures are one line and a non-zero exit: a metrics port in use (1), a --sink-token-env that is unset (2)", async () => {
  const kubeconfig = writeKubeconfig(join(dir, "kubeconfig-refusals"), { server: api.url, token: "kube-token" });
  const taken = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("taken") });
  try {
    const busy = Bun.spawn(
      [
        process.execPath,
        MAIN,
        "watcher",
        "watch",
        "--dry-run",
        `--kubeconfig=${kubeconfig}`,
        `--metrics-addr=127.0.0.1:${taken.port}`,
      ],
      { cwd: REPO_ROOT, stdin: "ignore", stdout: "pipe", stderr: "pipe" },
    );
    expect(await busy.exited).toBe(1);
    const busyLog = await new Response(busy.stderr).text();
    expect(busyLog).toContain(`--metrics-addr=127.0.0.1:${taken.port} cannot be served`);
    expect(busyLog).not.toContain("    at ");
  } finally {
    taken.stop(true);
  }
  const env = { ...process.env };
  delete env.HOOK_TOKEN_UNSET;
  const unset = Bun.spawn(
    [
      process.execPath,
      MAIN,
      "watcher",
      "watch",
      "--sink=webhook",
      "--sink-url=https://hooks.example.com/v1",
      "--sink-token-env=HOOK_TOKEN_UNSET",
      `--kubeconfig=${kubeconfig}`,
    ],
    { cwd: REPO_ROOT, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" },
  );
  expect(await unset.exited).toBe(2);
  expect(await new Response(unset.stderr).text()).toContain(
    "--sink-token-env=HOOK_TOKEN_UNSET: the variable is not set",
  );
}, 30_000);
