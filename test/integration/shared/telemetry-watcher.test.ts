/**
 * The watcher's telemetry, as a process against the fake kube-apiserver: `--otel-exporter=otlp`
 * with `--otel-endpoint` exports a server span per probe request (an inbound traceparent its
 * parent) and the `watcher_*` series to a local OTLP receiver, flushed on SIGTERM;
 * `--otel-exporter=console` writes each span as a JSON line on stderr, and OTEL_TRACES_EXPORTER
 * overrides the flag (the spec's "the standard env var overrides").
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { tempDir, waitFor } from "../../support/daemon.ts";
import { type WatcherProcess, spawnWatcher } from "../../support/watcher-process.ts";
import { writeKubeconfig } from "../../support/kube.ts";
import { type OtlpReceiver, startOtlpReceiver } from "../../support/otlp-receiver.ts";

let api: FakeApiserver;
let receiver: OtlpReceiver;
let kubeconfig: string;

beforeAll(async () => {
  api = await startFakeApiserver({ tokens: { "kube-token": "watcher" } });
  receiver = startOtlpReceiver();
  kubeconfig = writeKubeconfig(join(tempDir(), "kubeconfig"), { server: api.url, token: "kube-token" });
});

afterAll(async () => {
  await receiver.stop();
  await api.stop();
});

/** A dry-run watcher against the fake API server with `flags`. */
function startWatcher(flags: string[], env: Record<string, string> = {}): Promise<WatcherProcess> {
  return spawnWatcher(["--dry-run", `--kubeconfig=${kubeconfig}`, "--cluster-name=otel", ...flags], env);
}

test("--otel-exporter=otlp: a probe's span with its inbound parent, and the watcher_* series, reach the receiver", async () => {
  const watcher = await startWatcher(["--otel-exporter=otlp", `--otel-endpoint=${receiver.url}`], {
    OTEL_BSP_SCHEDULE_DELAY: "600000",
    OTEL_METRIC_EXPORT_INTERVAL: "200",
  });
  const traceId = "77777777777777777777777777777777";
  const probe = await fetch(`${watcher.base}/healthz`, {
    headers: { traceparent: `00-${traceId}-${"5".repeat(16)}-01` },
  });
  expect(probe.status).toBe(200);
  await receiver.waitForMetrics((all) =>
    all.some((metric) => metric.name.startsWith("watcher_") && metric.resource["service.name"] === "spar-watcher"),
  );
  expect(await watcher.stop()).toBe(0);
  const span = receiver.spans.find((candidate) => candidate.traceId === traceId);
  expect(span).toMatchObject({ name: "GET /healthz", parentSpanId: "5".repeat(16) });
  expect(span?.resource["service.name"]).toBe("spar-watcher");
  expect(span?.attributes["http.route"]).toBe("/healthz");
});

test("--otel-exporter=console: each span is one JSON line on stderr; OTEL_TRACES_EXPORTER=none overrides it", async () => {
  const printing = await startWatcher(["--otel-exporter=console"]);
  await fetch(`${printing.base}/readyz`);
  const line = await waitFor(
    () =>
      printing
        .stderr()
        .split("\n")
        .find((text) => text.startsWith('{"span":"GET /readyz"')),
    5000,
    "a span line",
  );
  expect(JSON.parse(line).attributes["http.route"]).toBe("/readyz");
  expect(await printing.stop()).toBe(0);

  const silenced = await startWatcher(["--otel-exporter=console"], { OTEL_TRACES_EXPORTER: "none" });
  await fetch(`${silenced.base}/readyz`);
  expect(await silenced.stop()).toBe(0);
  expect(silenced.stderr()).not.toContain('{"span":');
  expect(silenced.stderr()).not.toContain("telemetry:");
});
