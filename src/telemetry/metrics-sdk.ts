/**
 * The metrics half of the SDK, loaded only when metrics are exported over OTLP: a meter provider
 * with one periodic reader (OTEL_METRIC_EXPORT_INTERVAL, 60 s by default) whose exporter speaks
 * OTLP over HTTP as protobuf or JSON, fed by the exposition bridge (exposition-producer.ts) with
 * the same series the Prometheus `/metrics` serves.
 */
import { OTLPMetricExporter as JsonMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http";
import { OTLPMetricExporter as ProtobufMetricExporter } from "@opentelemetry/exporter-metrics-otlp-proto";
import type { Resource } from "@opentelemetry/resources";
import { MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { ExpositionProducer } from "./exposition-producer.ts";
import type { TelemetryPlan } from "./telemetry-plan.ts";

export async function startMetrics(
  plan: NonNullable<TelemetryPlan["metrics"]>,
  resource: Resource,
): Promise<{ meterProvider: MeterProvider; producer: ExpositionProducer }> {
  const producer = new ExpositionProducer();
  const exporter =
    plan.protocol === "http/json"
      ? new JsonMetricExporter({ url: plan.url })
      : new ProtobufMetricExporter({ url: plan.url });
  const reader = new PeriodicExportingMetricReader({
    exporter,
    exportIntervalMillis: plan.intervalMs,
    exportTimeoutMillis: plan.timeoutMs,
    metricProducers: [producer],
  });
  return { meterProvider: new MeterProvider({ resource, readers: [reader] }), producer };
}
