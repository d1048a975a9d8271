/**
 * DNS rebinding against the watcher's probe listener (/healthz, /readyz, /metrics), which has no
 * authentication gate: a page whose name rebinds to the listener's address is refused with a
 * JSON 421; loopback names, names in --metrics-allowed-hosts and, for a listener bound beyond
 * loopback (the kubelet probes the pod IP), address literals are served.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { type FakeApiserver, startFakeApiserver } from "../../scripts/fake-apiserver/server.ts";
import { MAIN, REPO_ROOT, tempDir, waitFor } from "../support/daemon.ts";
import { writeKubeconfig } from "../support/kube.ts";
import { rawHttp } from "../support/raw-http.ts";

let api: FakeApiserver;
const children: Array<Bun.Subprocess> = [];

beforeAll(async () => {
  api = await startFakeApiserver({ tokens: { "kube-token": "watcher" } });
});
afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  await api.stop();
});

async function probeListener(address: string, extra: string[] = []): Promise<number> {
  const dir = tempDir();
  const kubeconfig = writeKubeconfig(join(dir, "kubeconfig"), { server: api.url, token: "kube-token" });
  const child = Bun.spawn(
    [
      process.execPath,
      MAIN,
      "watcher",
      "watch",
      "--dry-run",
      `--kubeconfig=${kubeconfig}`,
      "--cluster-name=probes",
      "--storm=off",
      "--recovery-stable-for=0",
      `--metrics-addr=${address}`,
      ...extra,
    ],
    {
      cwd: REPO_ROOT,
      stdin: "ignore",
      stdout: "ignore",
      stderr: "pipe",
    },
  );
  children.push(child);
  let stderr = "";
  void (async () => {
    for await (const chunk of child.stderr) stderr += new TextDecoder().decode(chunk);
  })();
  const base = await waitFor(
    () => /metrics listening on http:\/\/\S+:(\d+)/.exec(stderr)?.[1],
    15_000,
    "the metrics line",
  );
  return Number(base);
}

const get = (port: number, path: string, host: string) =>
  rawHttp(port, `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);

describe("a loopback probe listener", () => {
  let port: number;
  beforeAll(async () => {
    port = await probeListener("127.0.0.1:0", ["--metrics-allowed-hosts=prom.internal"]);
  });

  test("a rebinding name is refused with a JSON 421 on every path", async () => {
    for (const path of ["/metrics", "/healthz", "/readyz"]) {
      const answer = await get(port, path, `attacker.example:${port}`);
      expect({ path, status: answer.status }).toEqual({ path, status: 421 });
      expect(answer.headers["content-type"]).toContain("application/json");
      expect(answer.body).toContain("--metrics-allowed-hosts");
    }
  });

  test("loopback names, listed names and no Host at all are served; another address literal is not", async () => {
    expect((await get(port, "/healthz", `127.0.0.1:${port}`)).status).toBe(200);
    expect((await get(port, "/healthz", "localhost")).status).toBe(200);
    expect((await get(port, "/metrics", "prom.internal:9090")).status).toBe(200);
    expect((await rawHttp(port, "GET /healthz HTTP/1.0\r\n\r\n")).status).toBe(200);
    expect((await get(port, "/healthz", "10.1.2.3")).status).toBe(421);
  });
});

describe("a probe listener bound to every interface (a pod)", () => {
  test("serves the pod IP the kubelet probes, still refuses a rebinding name", async () => {
    const port = await probeListener("0.0.0.0:0");
    expect((await get(port, "/healthz", `10.244.1.7:${port}`)).status).toBe(200);
    expect((await get(port, "/healthz", `[fd00::7]:${port}`)).status).toBe(200);
    expect((await get(port, "/healthz", "attacker.example")).status).toBe(421);
  });
});
