/**
 * Methods and paths on the watcher's probe listener (/healthz, /readyz, /metrics), a real watcher
 * process against the fake API server: a method the probes do not serve is a JSON 405 with
 * `Allow`, a path they do not serve a JSON 404, as on every other listener (the shared guards,
 * guardedApp); refused requests never read the metrics. The probes themselves answer as before.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { type FakeApiserver, startFakeApiserver } from "../../scripts/fake-apiserver/server.ts";
import { tempDir } from "../support/daemon.ts";
import { writeKubeconfig } from "../support/kube.ts";
import { type WatcherProcess, spawnWatcher } from "../support/watcher-process.ts";

let api: FakeApiserver;
let watcher: WatcherProcess;

beforeAll(async () => {
  api = await startFakeApiserver({ tokens: { "kube-token": "watcher" } });
  const kubeconfig = writeKubeconfig(join(tempDir(), "kubeconfig"), { server: api.url, token: "kube-token" });
  watcher = await spawnWatcher(["--dry-run", `--kubeconfig=${kubeconfig}`, "--cluster-name=routes", "--storm=off"]);
});

afterAll(async () => {
  await watcher.stop();
  await api.stop();
});

async function expectJsonError(response: Response, status: number, words: string): Promise<string> {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/json");
  const body = await response.text();
  expect((JSON.parse(body) as { error: string }).error).toContain(words);
  return body;
}

test("a write method on a probe path is a JSON 405 with Allow, not the probe's answer", async () => {
  for (const path of ["/metrics", "/healthz", "/readyz"]) {
    for (const method of ["POST", "PUT", "DELETE"]) {
      const response = await fetch(`${watcher.base}${path}`, {
        method,
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      const body = await expectJsonError(response, 405, `method ${method} is not allowed on ${path}`);
      expect(response.headers.get("allow")).toContain("GET");
      expect(body).not.toContain("watcher_");
    }
  }
});

test("an unknown path is a JSON 404 naming it; a trailing slash is another path", async () => {
  await expectJsonError(await fetch(`${watcher.base}/nope`), 404, "no such endpoint: GET /nope");
  await expectJsonError(await fetch(`${watcher.base}/metrics/`), 404, "no such endpoint: GET /metrics/");
});

test("the probes still answer GET in plain text", async () => {
  const health = await fetch(`${watcher.base}/healthz`);
  expect(health.status).toBe(200);
  expect(await health.text()).toBe("ok\n");
  const metrics = await fetch(`${watcher.base}/metrics`);
  expect(metrics.status).toBe(200);
  expect(metrics.headers.get("content-type")).toContain("text/plain");
  expect(await metrics.text()).toContain("watcher_");
});
