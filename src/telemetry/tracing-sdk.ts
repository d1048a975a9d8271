/**
 * The trace half of the SDK, loaded only when spans are exported: the sampler the plan names
 * (OTEL_TRACES_SAMPLER, parent-based always-on by default), the exporter (OTLP over HTTP as
 * protobuf or JSON, or one JSON line per span on stderr for `console`: stdout belongs to the
 * watcher's `--dry-run` payloads) and the batch processor with the plan's delays and sizes.
 */
import { OTLPTraceExporter as JsonTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtobufTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { type ExportResult, ExportResultCode } from "@opentelemetry/core";
import type { Resource } from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  type IdGenerator,
  ParentBasedSampler,
  RandomIdGenerator,
  type ReadableSpan,
  type Sampler,
  SimpleSpanProcessor,
  type SpanExporter,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import type { Logger } from "./logger.ts";
import type { SamplerPlan, TelemetryPlan } from "./telemetry-plan.ts";

/**
 * Random ids, except that the next span id may be given: a span whose id was named elsewhere (the
 * turn worker's model call, D324) is started with it. Set and used in one synchronous call.
 */
export class PresetSpanIds implements IdGenerator {
  readonly #random = new RandomIdGenerator();
  #next: string | undefined;

  /** The id the next span started gets (undefined: a random one again). */
  preset(spanId: string | undefined): void {
    this.#next = spanId;
  }

  generateTraceId(): string {
    return this.#random.generateTraceId();
  }

  generateSpanId(): string {
    const next = this.#next;
    if (next === undefined) return this.#random.generateSpanId();
    this.#next = undefined;
    return next;
  }
}

export async function startTracing(
  plan: TelemetryPlan,
  resource: Resource,
  logger: Logger,
  spanIds: PresetSpanIds,
): Promise<TracerProvider> {
  const traces = plan.traces;
  if (traces === undefined) throw new Error("startTracing needs a span exporter in the plan");
  const processor =
    traces.exporter === "console"
      ? new SimpleSpanProcessor({ exporter: new StderrSpanExporter(logger) })
      : new BatchSpanProcessor({
          exporter:
            traces.protocol === "http/json"
              ? new JsonTraceExporter({ url: traces.url })
              : new ProtobufTraceExporter({ url: traces.url }),
          ...plan.batch,
        });
  return new TracerProvider({
    resource,
    sampler: sampler(plan.sampler),
    spanProcessors: [processor],
    idGenerator: spanIds,
  });
}

function sampler(plan: SamplerPlan): Sampler {
  const root =
    plan.root === "always_off"
      ? new AlwaysOffSampler()
      : plan.root === "traceidratio"
        ? new TraceIdRatioBasedSampler(plan.ratio)
        : new AlwaysOnSampler();
  return plan.parentBased ? new ParentBasedSampler({ root }) : root;
}

/** `console`: one JSON line per ended span on stderr. */
class StderrSpanExporter implements SpanExporter {
  constructor(private readonly logger: Logger) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    for (const span of spans) {
      const context = span.spanContext();
      const [seconds, nanos] = span.duration;
      process.stderr.write(
        `${JSON.stringify({
          span: span.name,
          traceId: context.traceId,
          spanId: context.spanId,
          parentSpanId: span.parentSpanContext?.spanId,
          kind: span.kind,
          durationMs: seconds * 1000 + nanos / 1e6,
          status: span.status,
          attributes: span.attributes,
        })}\n`,
      );
    }
    done({ code: ExportResultCode.SUCCESS });
  }

  async shutdown(): Promise<void> {
    this.logger.debug("telemetry: console span exporter stopped");
  }

  async forceFlush(): Promise<void> {}
}
