/**
 * The /metrics -> OTLP bridge (src/telemetry/exposition-producer.ts): the exposition our registry
 * renders becomes the same series, counters as monotonic cumulative sums and gauges as gauges.
 */
import { expect, test } from "bun:test";
import { DataPointType } from "@opentelemetry/sdk-metrics";
import { ExpositionProducer, parseExposition } from "../../../src/telemetry/exposition-producer.ts";
import { MetricsRegistry } from "../../../src/telemetry/metrics.ts";

function registry(): MetricsRegistry {
  const metrics = new MetricsRegistry();
  const turns = metrics.counter("spar_turns_total", "Turns finished, by outcome.");
  turns({ outcome: "completed" }, 3);
  turns({ outcome: "failed" });
  metrics.gauge("spar_sessions_live", "Sessions in memory.", () => 7);
  metrics.counter("spar_unused_total", "Never counted.");
  return metrics;
}

test("the registry's exposition parses back into its families, labels and values", () => {
  expect(parseExposition(registry().render())).toEqual([
    {
      name: "spar_turns_total",
      help: "Turns finished, by outcome.",
      type: "counter",
      points: [
        { labels: { outcome: "completed" }, value: 3 },
        { labels: { outcome: "failed" }, value: 1 },
      ],
    },
    { name: "spar_sessions_live", help: "Sessions in memory.", type: "gauge", points: [{ labels: {}, value: 7 }] },
    { name: "spar_unused_total", help: "Never counted.", type: "counter", points: [] },
  ]);
});

test("collect hands the series on: counters as monotonic sums, gauges as gauges, empty families left out", async () => {
  const producer = new ExpositionProducer();
  const metrics = registry();
  producer.add(() => metrics.render());
  const collected = await producer.collect();
  const exported = collected.resourceMetrics.scopeMetrics[0]?.metrics ?? [];
  expect(exported.map((metric) => [metric.descriptor.name, metric.dataPointType])).toEqual([
    ["spar_turns_total", DataPointType.SUM],
    ["spar_sessions_live", DataPointType.GAUGE],
  ]);
  const sum = exported[0];
  expect(sum?.dataPointType === DataPointType.SUM && sum.isMonotonic).toBe(true);
  expect(sum?.dataPoints.map((point) => [point.attributes, point.value])).toEqual([
    [{ outcome: "completed" }, 3],
    [{ outcome: "failed" }, 1],
  ]);
});

test("a source that throws is reported as a collection error, the others still export", async () => {
  const producer = new ExpositionProducer();
  producer.add(() => {
    throw new Error("broken source");
  });
  producer.add(() => registry().render());
  const collected = await producer.collect();
  expect(collected.errors).toHaveLength(1);
  expect(collected.resourceMetrics.scopeMetrics[0]?.metrics).toHaveLength(2);
});
