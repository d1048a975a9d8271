/**
 * startTelemetry (src/telemetry/telemetry.ts) in process: with nothing configured no provider is
 * registered and the global API stays no-op (spans do not record, propagation injects nothing);
 * configured, the globals are the SDK's until shutdown, which restores the no-op API within the
 * flush budget even when the collector never answers. Off, no SDK module is even loaded.
 */
import { afterEach, expect, test } from "bun:test";
import { join, resolve } from "node:path";
import { ROOT_CONTEXT, context, propagation, trace } from "@opentelemetry/api";
import { createLogger } from "../../../src/telemetry/logger.ts";
import {
  TELEMETRY_FLUSH_MS,
  type TelemetryHandle,
  activeTracer,
  extractContext,
  injectContext,
  startSpanWithId,
  startTelemetry,
} from "../../../src/telemetry/telemetry.ts";
import { type OtlpReceiver, startOtlpReceiver } from "../../support/otlp-receiver.ts";

const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const quiet = createLogger("error");
let started: TelemetryHandle | undefined;

afterEach(async () => {
  await started?.shutdown();
  started = undefined;
});

function globalSpanRecords(): boolean {
  const span = trace.getTracer("probe").startSpan("probe");
  const recording = span.isRecording();
  span.end();
  return recording;
}

test("nothing configured: inactive, no tracer provider registered, propagation a no-op", async () => {
  started = await startTelemetry("agent", { settings: {}, version: "test", logger: quiet, env: {} });
  expect(started.active).toBe(false);
  expect(activeTracer()).toBeUndefined();
  expect(globalSpanRecords()).toBe(false);
  const carried = extractContext(new Headers({ traceparent: TRACEPARENT }));
  expect(carried).toBe(ROOT_CONTEXT);
  const headers: Record<string, string> = {};
  propagation.inject(context.active(), headers);
  injectContext(headers);
  expect(headers).toEqual({});
});

test("OTEL_SDK_DISABLED=true with an endpoint: inactive, nothing registered", async () => {
  const env = { OTEL_SDK_DISABLED: "true", OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9" };
  started = await startTelemetry("svc", { settings: {}, version: "test", logger: quiet, env });
  expect(started.active).toBe(false);
  expect(globalSpanRecords()).toBe(false);
});

/** Telemetry exporting spans (batched for 20 ms) to `receiver`, metrics off. */
async function exportingTo(receiver: OtlpReceiver): Promise<TelemetryHandle> {
  return startTelemetry("agent", {
    settings: { endpoint: receiver.url },
    version: "test",
    logger: quiet,
    env: { OTEL_METRICS_EXPORTER: "none", OTEL_BSP_SCHEDULE_DELAY: "20" },
  });
}

test("configured: the SDK's provider and the W3C propagator are global until shutdown", async () => {
  const receiver = startOtlpReceiver();
  try {
    started = await exportingTo(receiver);
    expect(started.active).toBe(true);
    expect(globalSpanRecords()).toBe(true);
    const parent = extractContext(new Headers({ traceparent: TRACEPARENT, baggage: "tenant=acme" }));
    const headers: Record<string, string> = {};
    injectContext(headers, parent);
    expect(headers.traceparent).toBe(TRACEPARENT);
    expect(headers.baggage).toBe("tenant=acme");
    await started.shutdown();
    expect(activeTracer()).toBeUndefined();
    expect(globalSpanRecords()).toBe(false);
  } finally {
    await receiver.stop();
  }
});

test("a span named elsewhere (the worker's model call) starts under that id, and only that one span", async () => {
  const receiver = startOtlpReceiver();
  try {
    started = await exportingTo(receiver);
    const parent = extractContext(new Headers({ traceparent: TRACEPARENT }));
    const named = startSpanWithId("1234567890abcdef", "chat echo", { startTime: Date.now() - 50 }, parent);
    const next = activeTracer()?.startSpan("next", {}, parent);
    const refused = startSpanWithId("0".repeat(16), "bad id", {}, parent);
    expect(named?.spanContext().spanId).toBe("1234567890abcdef");
    expect(named?.spanContext().traceId).toBe(TRACEPARENT.slice(3, 35));
    expect(next?.spanContext().spanId).not.toBe("1234567890abcdef");
    expect(refused?.spanContext().spanId).toMatch(/^(?!0{16})[0-9a-f]{16}$/);
    for (const span of [named, next, refused]) span?.end();
    const spans = await receiver.waitForSpans((all) => all.some((span) => span.name === "chat echo"));
    const chat = spans.find((span) => span.name === "chat echo");
    expect(chat?.parentSpanId).toBe("00f067aa0ba902b7");
    expect(chat?.durationMs).toBeGreaterThanOrEqual(45);
  } finally {
    await receiver.stop();
  }
});

test("off: a span named elsewhere is not started", () => {
  expect(startSpanWithId("1234567890abcdef", "chat echo", {}, ROOT_CONTEXT)).toBeUndefined();
});

test("shutdown returns within the flush budget when the collector never answers", async () => {
  // A listener that accepts and never answers: the export hangs until its own 10 s timeout.
  const silent = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data: () => {} } });
  try {
    started = await startTelemetry("agent", {
      settings: { endpoint: `http://127.0.0.1:${silent.port}` },
      version: "test",
      logger: quiet,
      env: { OTEL_METRICS_EXPORTER: "none" },
    });
    trace.getTracer("probe").startSpan("batched").end();
    const began = performance.now();
    await started.shutdown();
    const took = performance.now() - began;
    expect(took).toBeLessThan(TELEMETRY_FLUSH_MS + 500);
    expect(took).toBeGreaterThanOrEqual(TELEMETRY_FLUSH_MS - 50);
  } finally {
    silent.stop(true);
  }
});

/** The OpenTelemetry packages a fresh process has loaded after startTelemetry with `env`. */
function packagesLoaded(env: Record<string, string>): string[] {
  const source = resolve(import.meta.dir, "../../../src/telemetry");
  const script = `
    const { startTelemetry } = await import(${JSON.stringify(join(source, "telemetry.ts"))});
    const { createLogger } = await import(${JSON.stringify(join(source, "logger.ts"))});
    const handle = await startTelemetry("agent", { settings: {}, version: "x", logger: createLogger("error"), env: ${JSON.stringify(env)} });
    const names = Object.keys(require.cache).map((path) => /node_modules\\/(@opentelemetry\\/[^/]+)/.exec(path)?.[1]).filter(Boolean);
    console.log(JSON.stringify([...new Set(names)].sort()));
    await handle.shutdown();`;
  const run = Bun.spawnSync([process.execPath, "-e", script], { stdout: "pipe", stderr: "pipe" });
  if (run.exitCode !== 0) throw new Error(run.stderr.toString());
  return JSON.parse(run.stdout.toString());
}

test("off, only the API package is loaded: no SDK, exporter or context-manager module", () => {
  expect(packagesLoaded({})).toEqual(["@opentelemetry/api"]);
  expect(packagesLoaded({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9" })).toContain("@opentelemetry/sdk-trace");
});
