/**
 * The bridge from the Prometheus `/metrics` series to OTLP: a metric producer the SDK's periodic
 * reader asks at each export, which reads the same exposition text `/metrics` serves (every
 * registered source, rendered by src/telemetry/metrics.ts or merged by the watcher) and hands each
 * series on unchanged: a counter as a cumulative monotonic sum, a gauge as a gauge, same name,
 * same labels as attributes, the HELP text as the description. Reading the rendered text keeps one
 * truth for both exports and sees series registered after start (a watcher's cluster that joins).
 */
import { ValueType } from "@opentelemetry/api";
import type { HrTime } from "@opentelemetry/api";
import {
  AggregationTemporality,
  type CollectionResult,
  DataPointType,
  type MetricData,
  type MetricProducer,
} from "@opentelemetry/sdk-metrics";
import { emptyResource } from "@opentelemetry/resources";

/** One series family as the exposition declares it. */
export interface ExposedFamily {
  name: string;
  help: string;
  type: "counter" | "gauge";
  points: Array<{ labels: Record<string, string>; value: number }>;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"/g;

/** The families of an exposition in the text format (untyped and other types are skipped). */
export function parseExposition(text: string): ExposedFamily[] {
  const families = new Map<string, ExposedFamily>();
  const help = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line.startsWith("# HELP ")) {
      const [name, ...words] = line.slice(7).split(" ");
      if (name) help.set(name, words.join(" "));
    } else if (line.startsWith("# TYPE ")) {
      const [name, type] = line.slice(7).split(" ");
      if (name && (type === "counter" || type === "gauge") && !families.has(name))
        families.set(name, { name, help: help.get(name) ?? "", type, points: [] });
    } else if (line !== "" && !line.startsWith("#")) {
      const match = SAMPLE.exec(line);
      const family = match?.[1] ? families.get(match[1]) : undefined;
      const value = Number(match?.[3]);
      if (!family || !Number.isFinite(value)) continue;
      const labels: Record<string, string> = {};
      for (const [, key, text] of (match?.[2] ?? "").matchAll(LABEL)) if (key) labels[key] = text ?? "";
      family.points.push({ labels, value });
    }
  }
  return [...families.values()];
}

function hrNow(): HrTime {
  const now = Date.now();
  return [Math.floor(now / 1000), (now % 1000) * 1_000_000];
}

/** The producer the periodic reader collects from; `sources` may grow after it starts. */
export class ExpositionProducer implements MetricProducer {
  readonly #sources: Array<() => string> = [];
  readonly #startTime = hrNow();

  add(source: () => string): void {
    this.#sources.push(source);
  }

  async collect(): Promise<CollectionResult> {
    const errors: unknown[] = [];
    const metrics: MetricData[] = [];
    const endTime = hrNow();
    for (const source of this.#sources) {
      try {
        for (const family of parseExposition(source()))
          if (family.points.length > 0) metrics.push(this.#metric(family, endTime));
      } catch (error) {
        errors.push(error);
      }
    }
    return {
      resourceMetrics: {
        resource: emptyResource(),
        scopeMetrics: metrics.length > 0 ? [{ scope: { name: "spar" }, metrics }] : [],
      },
      errors,
    };
  }

  #metric(family: ExposedFamily, endTime: HrTime): MetricData {
    const descriptor = { name: family.name, description: family.help, unit: "", valueType: ValueType.DOUBLE };
    const dataPoints = family.points.map((point) => ({
      startTime: this.#startTime,
      endTime,
      attributes: point.labels,
      value: point.value,
    }));
    return family.type === "counter"
      ? {
          descriptor,
          aggregationTemporality: AggregationTemporality.CUMULATIVE,
          dataPointType: DataPointType.SUM,
          dataPoints,
          isMonotonic: true,
        }
      : {
          descriptor,
          aggregationTemporality: AggregationTemporality.CUMULATIVE,
          dataPointType: DataPointType.GAUGE,
          dataPoints,
        };
  }
}
