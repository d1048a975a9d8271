/**
 * The single binary: `dist/spar` (rebuilt by scripts/build.ts when missing or older than any file
 * in src/, workers/ or the build script), copied alone into a fresh temp dir and started from
 * there, runs an echo turn on its embedded turn worker; invoked as `svc` through a symlink (or as
 * `watcher` through a copy) it behaves as `spar svc` / `spar watcher` (D1); help exits 0; it exports
 * telemetry over OTLP like the source build (the SDK is bundled though loaded lazily).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, rmSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { BUILD_TIMEOUT_MS, copiedBinary } from "../../support/compiled-binary.ts";
import { type Daemon, postJson, startDaemon, tempDir, waitFor } from "../../support/daemon.ts";
import { rawHttp } from "../../support/raw-http.ts";
import { startOtlpReceiver } from "../../support/otlp-receiver.ts";
import { collect } from "../../support/sse-client.ts";
import { writeKubeconfig } from "../../support/kube.ts";
import { startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(command: string[], cwd: string): Promise<Run> {
  const child = Bun.spawn(command, { cwd, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [code, stdout, stderr] = await Promise.all([
    child.exited,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ]);
  return { code, stdout, stderr };
}

let dir: string;
let binary: string;
const daemons: Daemon[] = [];

beforeAll(async () => {
  dir = tempDir("spar-binary-");
  binary = await copiedBinary(dir);
}, BUILD_TIMEOUT_MS);

afterAll(async () => {
  for (const daemon of daemons.splice(0)) if (daemon.process.exitCode === null) await daemon.kill9();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("the copied binary, started from a temp dir, runs an echo turn on its embedded worker", async () => {
  const daemon = await startDaemon({ binary, cwd: dir, sessionDb: join(dir, "sessions.db") });
  daemons.push(daemon);
  const stream = collect(`${daemon.baseUrl}/sessions/default/events`);
  try {
    await stream.waitFor((frame) => frame.event === "usage-update");
    const response = await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "hello binary" });
    expect(response.status).toBe(200);

    const end = await stream.waitFor(
      (frame) => frame.event === "turn-complete" || frame.event === "turn-error",
      15_000,
    );
    expect({ event: end.event, data: end.data }).toMatchObject({ event: "turn-complete", data: { model: "echo" } });
    const reply = stream.frames.filter((frame) => frame.event === "agent").at(-1)?.data.event as
      | { Content: { parts: Array<{ text: string }> } }
      | undefined;
    expect(reply?.Content.parts[0]?.text).toBe("hello binary");

    const turns = await waitFor(
      async () => {
        const usage = (await (await fetch(`${daemon.baseUrl}/sessions/default/usage`)).json()) as {
          overall: { turns: number };
        };
        return usage.overall.turns >= 1 ? usage.overall.turns : undefined;
      },
      10_000,
      "usage to count the turn",
    );
    expect(turns).toBe(1);
    // Built with Bun's header limit raised: the daemon's own limit answers, as JSON.
    const large = await rawHttp(
      daemon.port,
      `GET /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: ${"p".repeat(20_000)}\r\nConnection: close\r\n\r\n`,
    );
    expect(large.status).toBe(431);
    expect(large.body).toContain("larger than 16384 bytes");
  } finally {
    stream.close();
  }
  expect(await daemon.sigterm()).toBe(0);
  expect(daemon.log()).not.toContain("turn worker crashed");
}, 60_000);

test("the copied binary runs the watcher's sources in their embedded workers: an event becomes a dry-run payload", async () => {
  const api = await startFakeApiserver({});
  const watcher = Bun.spawn(
    [
      binary,
      "watcher",
      "watch",
      "--dry-run",
      `--kubeconfig=${writeKubeconfig(join(dir, "kubeconfig"), { server: api.url })}`,
      "--cluster-name=binary",
      "--sources=cluster-events,object-state",
      "--storm=off",
      "--recovery-stable-for=0",
    ],
    { cwd: dir, stdin: "ignore", stdout: "pipe", stderr: "pipe" },
  );
  let stdout = "";
  let stderr = "";
  void (async () => {
    for await (const chunk of watcher.stdout) stdout += new TextDecoder().decode(chunk);
  })();
  void (async () => {
    for await (const chunk of watcher.stderr) stderr += new TextDecoder().decode(chunk);
  })();
  try {
    await waitFor(() => (stderr.includes("watcher: watching") ? true : undefined), 20_000, "the watcher watching");
    const pod = api.scenario.createPod({
      namespace: "shop",
      name: "bin-1",
      node: "n1",
      containers: [{ name: "app", waitingReason: "CrashLoopBackOff", restartCount: 3 }],
    } as never);
    api.scenario.recordEvent({
      involvedObject: pod,
      reason: "BackOff",
      message: "Back-off restarting failed container app in pod",
      type: "Warning",
      source: { host: "n1" },
      fieldPath: "spec.containers{app}",
      count: 5,
    });
    await waitFor(() => (stdout.includes('"name": "bin-1"') ? true : undefined), 20_000, "the dry-run payload");
    expect(stderr).not.toContain("worker lost");
    expect(stderr).toContain("object-state/nodes: synced");
  } finally {
    watcher.kill("SIGTERM");
    await watcher.exited;
    await api.stop();
  }
}, 60_000);

describe("invoked-as dispatch (D1) and help", () => {
  test("a symlink named svc answers like `spar svc`", async () => {
    const link = join(dir, "svc");
    symlinkSync(binary, link);
    const viaLink = await run([link, "--version"], dir);
    const direct = await run([binary, "svc", "--version"], dir);
    expect(viaLink).toEqual(direct);
    expect(viaLink.code).toBe(0);
    expect(viaLink.stdout).toMatch(/^spar svc \d/);
  });

  test("a copy named watcher answers like `spar watcher`", async () => {
    const copy = join(dir, "watcher");
    copyFileSync(binary, copy);
    Bun.spawnSync(["chmod", "755", copy]);
    const viaCopy = await run([copy, "--help"], dir);
    expect(viaCopy).toEqual(await run([binary, "watcher", "--help"], dir));
    expect(viaCopy.code).toBe(0);
    expect(viaCopy.stdout).toContain("spar watcher");
    rmSync(copy, { force: true });
  });

  test("`spar --help` and `spar agent --help` print help and exit 0", async () => {
    const top = await run([binary, "--help"], dir);
    expect(top.code).toBe(0);
    expect(top.stdout).toContain("usage: spar <command>");
    const agent = await run([binary, "agent", "--help"], dir);
    expect(agent.code).toBe(0);
    expect(agent.stdout).toContain("usage: spar agent");
  });
});

test("(issue 18 g) the copied binary exports: an inject's server span, with its inbound parent, reaches an OTLP receiver on SIGTERM", async () => {
  const receiver = startOtlpReceiver();
  try {
    const daemon = await startDaemon({
      binary,
      cwd: dir,
      sessionDb: join(dir, "otel-sessions.db"),
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: "600000" },
    });
    daemons.push(daemon);
    const traceId = "99999999999999999999999999999999";
    const response = await postJson(
      `${daemon.baseUrl}/sessions/default/inject`,
      { message: "traced" },
      { traceparent: `00-${traceId}-${"8".repeat(16)}-01` },
    );
    expect(response.status).toBe(200);
    // The echo turn ends before the flush: its spans come from the binary's embedded turn worker too.
    await waitFor(
      async () => {
        const usage = (await (await fetch(`${daemon.baseUrl}/sessions/default/usage`)).json()) as {
          per_turn?: unknown[];
        };
        return usage.per_turn?.length === 1 ? true : undefined;
      },
      15_000,
      "the echo turn",
    );
    expect(await daemon.sigterm()).toBe(0);
    const traced = receiver.spans.filter((candidate) => candidate.traceId === traceId);
    const span = traced.find((candidate) => candidate.name.startsWith("POST"));
    expect(span).toMatchObject({
      name: "POST /sessions/:p1/inject",
      parentSpanId: "8".repeat(16),
      encoding: "protobuf",
    });
    const turn = traced.find((candidate) => candidate.name.startsWith("invoke_agent"));
    expect(turn?.parentSpanId).toBe(span?.spanId ?? "?");
    expect(traced.find((candidate) => candidate.name === "chat echo")?.parentSpanId).toBe(turn?.spanId ?? "?");
    expect(receiver.metrics.some((metric) => metric.name === "spar_turns_total")).toBe(true);
  } finally {
    await receiver.stop();
  }
});
