/**
 * Telemetry of the real daemons against a local OTLP receiver (test/support/otlp-receiver.ts):
 * (c) an inbound traceparent on the agent's /inject is adopted, over protobuf and JSON; (e) SIGTERM
 * flushes spans still batched (a ten-minute batch delay), with OTEL_EXPORTER_OTLP_HEADERS on each export; `svc stop` flushes svc's; the /metrics
 * series reach the receiver; (f) with nothing configured, or with OTEL_SDK_DISABLED=true, the
 * receiver sees no request at all and the daemon logs no telemetry line.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startA2aDaemon } from "../../support/a2a-daemon.ts";
import { aguiWorkload, startAgui } from "../../support/agui-daemon.ts";
import { type Daemon, postJson } from "../../support/daemon.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../../support/otlp-receiver.ts";

const scope = daemonScope();
/** OTLP's SPAN_KIND_SERVER. */
const SERVER_KIND = 2;
let receiver: OtlpReceiver;

beforeAll(() => {
  receiver = startOtlpReceiver();
});

afterAll(async () => {
  await receiver.stop();
});

/** Spans still batched at shutdown: only the flush can send them. */
const HELD_BACK = { OTEL_BSP_SCHEDULE_DELAY: "600000", OTEL_METRIC_EXPORT_INTERVAL: "600000" };

function traceparent(traceId: string, parent: string): Record<string, string> {
  return { traceparent: `00-${traceId}-${parent}-01` };
}

function spansOf(traceId: string): ReceivedSpan[] {
  return receiver.spans.filter((span) => span.traceId === traceId);
}

/** The trace's HTTP server spans (kind SERVER): its turns and commits have their own tests. */
function serverSpansOf(traceId: string): ReceivedSpan[] {
  return spansOf(traceId).filter((span) => span.kind === SERVER_KIND);
}

describe("the agent", () => {
  for (const [protocol, traceId] of [
    ["http/protobuf", "11111111111111111111111111111111"],
    ["http/json", "22222222222222222222222222222222"],
  ] as const) {
    test(`(c) an inbound traceparent on /inject is adopted as the parent (${protocol})`, async () => {
      const daemon = await scope.start({
        env: {
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
          OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
          OTEL_BSP_SCHEDULE_DELAY: "50",
        },
      });
      const parent = "00f067aa0ba902b7";
      const response = await postJson(
        `${daemon.baseUrl}/sessions/default/inject`,
        { message: "hi" },
        traceparent(traceId, parent),
      );
      expect(response.status).toBe(200);
      const [span] = await receiver
        .waitForSpans(() => serverSpansOf(traceId).length > 0)
        .then(() => serverSpansOf(traceId));
      expect(span).toMatchObject({
        name: "POST /sessions/:p1/inject",
        parentSpanId: parent,
        encoding: protocol === "http/json" ? "json" : "protobuf",
      });
      expect(span?.attributes["http.response.status_code"]).toBe(200);
      expect(span?.resource["service.name"]).toBe("spar-agent");
    });
  }

  test("(e) SIGTERM flushes the spans still batched, and the metrics, before exit 0", async () => {
    const daemon = await scope.start({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20collector-token",
        ...HELD_BACK,
      },
    });
    const traceId = "33333333333333333333333333333333";
    const before = receiver.requests.length;
    await postJson(
      `${daemon.baseUrl}/sessions/default/inject`,
      { message: "batched" },
      traceparent(traceId, "1234567890abcdef"),
    );
    // Time under test: 300 ms in which an exporter that did not batch would have sent the span.
    await Bun.sleep(300);
    expect(spansOf(traceId)).toEqual([]);
    expect(await daemon.sigterm()).toBe(0);
    expect(serverSpansOf(traceId).map((span) => span.name)).toEqual(["POST /sessions/:p1/inject"]);
    const instance = serverSpansOf(traceId)[0]?.resource["service.instance.id"];
    const turns = receiver.metrics.find(
      (metric) => metric.name === "spar_turns_total" && metric.resource["service.instance.id"] === instance,
    );
    expect(turns).toMatchObject({ type: "sum", monotonic: true });
    expect(turns?.points).toContainEqual({ attributes: { outcome: "completed" }, value: 1 });
    // OTEL_EXPORTER_OTLP_HEADERS rides on every export request.
    const exports = receiver.requests.slice(before);
    expect(exports.length).toBeGreaterThanOrEqual(2);
    expect(exports.every((request) => request.authorization === "Bearer collector-token")).toBe(true);
  });

  test("the /metrics series reach the receiver on the export interval, named and labelled as /metrics has them", async () => {
    const daemon = await scope.start({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_METRIC_EXPORT_INTERVAL: "200",
        OTEL_SERVICE_NAME: "metrics-probe",
      },
    });
    await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "count me" });
    const metrics = await receiver.waitForMetrics((all) =>
      all.some(
        (metric) =>
          metric.resource["service.name"] === "metrics-probe" &&
          metric.name === "spar_turns_total" &&
          metric.points.some((point) => point.value === 1),
      ),
    );
    const exposition = await (await fetch(`${daemon.baseUrl}/metrics`)).text();
    expect(exposition).toContain('spar_turns_total{outcome="completed"} 1');
    const gauge = metrics.find(
      (metric) => metric.resource["service.name"] === "metrics-probe" && metric.type === "gauge",
    );
    expect(gauge).toBeDefined();
    expect(exposition).toContain(`# TYPE ${gauge?.name} gauge`);
  });
});

describe("(f) nothing configured", () => {
  async function exercise(daemon: Daemon): Promise<void> {
    await postJson(
      `${daemon.baseUrl}/sessions/default/inject`,
      { message: "quiet" },
      traceparent("4".repeat(32), "1".repeat(16)),
    );
    await fetch(`${daemon.baseUrl}/healthz`);
    expect(await daemon.sigterm()).toBe(0);
  }

  test("no OTEL variable and no flag: no telemetry line, and the receiver sees nothing", async () => {
    const before = receiver.requests.length;
    const daemon = await scope.start({
      env: { OTEL_SERVICE_NAME: "unused", OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" },
    });
    await exercise(daemon);
    expect(daemon.log()).not.toContain("telemetry:");
    expect(receiver.requests.length).toBe(before);
  });

  test("OTEL_SDK_DISABLED=true beside an endpoint and the flag: zero requests reach the receiver", async () => {
    const before = receiver.requests.length;
    const daemon = await scope.start({
      args: [`--otel-endpoint=${receiver.url}`],
      env: { OTEL_SDK_DISABLED: "true", OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, ...HELD_BACK },
    });
    await exercise(daemon);
    expect(daemon.log()).not.toContain("telemetry:");
    expect(receiver.requests.length).toBe(before);
  });
});

describe("--otel-endpoint", () => {
  test("the flag alone turns export on; a bad URL is refused at startup with exit 2", async () => {
    const daemon = await scope.start({ args: [`--otel-endpoint=${receiver.url}`], env: HELD_BACK });
    const traceId = "55555555555555555555555555555555";
    await fetch(`${daemon.baseUrl}/healthz`, { headers: traceparent(traceId, "2".repeat(16)) });
    expect(await daemon.sigterm()).toBe(0);
    expect(spansOf(traceId).map((span) => span.name)).toEqual(["GET /healthz"]);
    const refused = Bun.spawnSync([process.execPath, "src/main.ts", "agent", "--otel-endpoint=ftp://collector"], {
      stderr: "pipe",
    });
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr.toString()).toContain("--otel-endpoint");
  });
});

describe("svc", () => {
  test("its main listener's /inject adopts the traceparent; `svc stop` (POST /stop) flushes the batch", async () => {
    const daemon = await scope.start({
      role: "svc",
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", ...HELD_BACK },
    });
    const traceId = "66666666666666666666666666666666";
    const injected = await postJson(
      `${daemon.baseUrl}/inject`,
      { uid: "u1", reason: "Ping" },
      traceparent(traceId, "3".repeat(16)),
    );
    expect(injected.status).toBe(202);
    expect((await postJson(`${daemon.baseUrl}/stop`, {})).status).toBe(202);
    expect(await daemon.process.exited).toBe(0);
    const spans = serverSpansOf(traceId);
    expect(spans.map((span) => [span.name, span.parentSpanId, span.resource["service.name"]])).toEqual([
      ["POST /inject", "3".repeat(16), "spar-svc"],
    ]);
    // The incident's turn runs on the runtime core: its span joins the inject's trace (D301).
    const turn = spansOf(traceId).find((span) => span.name.startsWith("invoke_agent"));
    expect(turn?.parentSpanId).toBe(spans[0]?.spanId ?? "?");
    expect(turn?.attributes["gen_ai.conversation.id"]).toBe("incident-u1");
  });

  test("its A2A and AG-UI listeners span their requests too, under the inbound parent", async () => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: "50" };
    const a2aTrace = "88888888888888888888888888888888";
    const a2a = await startA2aDaemon(scope, [], { env });
    expect(
      (await fetch(`${a2a.a2aUrl}/.well-known/agent-card.json`, { headers: traceparent(a2aTrace, "6".repeat(16)) }))
        .status,
    ).toBe(200);
    const aguiTrace = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const agui = await startAgui(scope, aguiWorkload(), [], { env });
    expect(
      (await fetch(`${agui.base}/agui/agents.json`, { headers: traceparent(aguiTrace, "7".repeat(16)) })).status,
    ).toBe(200);
    await receiver.waitForSpans(() => spansOf(a2aTrace).length > 0 && spansOf(aguiTrace).length > 0);
    expect(spansOf(a2aTrace).map((span) => [span.name, span.parentSpanId, span.resource["service.name"]])).toEqual([
      ["GET /.well-known/agent-card.json", "6".repeat(16), "spar-svc"],
    ]);
    expect(spansOf(aguiTrace).map((span) => [span.name, span.parentSpanId])).toEqual([
      ["GET /agui/agents.json", "7".repeat(16)],
    ]);
  });
});
