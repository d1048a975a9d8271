/**
 * The OpenTelemetry set-up of a role: `startTelemetry(role, options)` resolves the plan
 * (telemetry-plan.ts) and, only when one exists, loads the SDK, registers the global tracer and
 * meter providers, the AsyncLocalStorage context manager and the W3C trace-context + baggage
 * propagator, and returns a handle whose `shutdown()` flushes and stops within telemetry's share of
 * the shutdown budget (3 s, docs/telemetry.md#shutdown). Off, it creates no SDK object, loads no
 * SDK module and sends nothing; the global API stays the no-op it is. `extractContext` /
 * `injectContext` carry W3C headers for the listeners and, later, the outbound clients. The OTLP
 * endpoint is operator configuration, not a caller's URL, so the exporters' requests do not pass
 * the tools' outbound guard.
 */
import { randomUUID } from "node:crypto";
import {
  type Context,
  DiagLogLevel,
  ROOT_CONTEXT,
  type Span,
  type SpanOptions,
  type TextMapGetter,
  type Tracer,
  context,
  diag,
  metrics,
  propagation,
  trace,
} from "@opentelemetry/api";
import type { Logger } from "./logger.ts";
import {
  type TelemetryPlan,
  type TelemetryRole,
  type TelemetrySettings,
  resolveTelemetryPlan,
} from "./telemetry-plan.ts";
import type { ExpositionProducer } from "./exposition-producer.ts";
import type { PresetSpanIds } from "./tracing-sdk.ts";
import { isSpanId } from "../core/trace-carrier.ts";

/** Telemetry's share of the shutdown budget (docs/telemetry.md#shutdown). */
export const TELEMETRY_FLUSH_MS = 3000;
const INSTRUMENTATION_NAME = "spar";

export interface TelemetryOptions {
  settings: TelemetrySettings;
  version: string;
  logger: Logger;
  /** The environment read for the OTEL_* variables (process.env by default). */
  env?: Readonly<Record<string, string | undefined>>;
}

export interface TelemetryHandle {
  /** Whether an SDK runs (something was configured). */
  readonly active: boolean;
  /** Export this Prometheus exposition's series over OTLP too (nothing when metrics are off). */
  observeMetrics(render: () => string): void;
  /** Flush what is batched and stop, within TELEMETRY_FLUSH_MS; never rejects. */
  shutdown(): Promise<void>;
}

interface Running {
  tracer: Tracer | undefined;
  spanIds: PresetSpanIds | undefined;
}

let running: Running | undefined;

const OFF: TelemetryHandle = { active: false, observeMetrics: () => {}, shutdown: async () => {} };

/** The tracer of the running SDK; undefined when telemetry is off (callers skip all span work). */
export function activeTracer(): Tracer | undefined {
  return running?.tracer;
}

/**
 * Start a span whose id was named elsewhere (the turn worker's model call, D324); a fresh id when
 * `spanId` is not a valid one. Undefined when spans are off.
 */
export function startSpanWithId(spanId: string, name: string, options: SpanOptions, parent: Context): Span | undefined {
  const tracer = running?.tracer;
  if (tracer === undefined) return undefined;
  const ids = running?.spanIds;
  if (ids === undefined || !isSpanId(spanId)) return tracer.startSpan(name, options, parent);
  ids.preset(spanId);
  try {
    return tracer.startSpan(name, options, parent);
  } finally {
    // A span the SDK did not record (suppressed) drew no id: the next one must not get this one.
    ids.preset(undefined);
  }
}

/** Start the role's telemetry; a no-op handle when nothing is configured. One per process. */
export async function startTelemetry(role: TelemetryRole, options: TelemetryOptions): Promise<TelemetryHandle> {
  const warn = (message: string) => options.logger.warn(`telemetry: ${message}`);
  const plan = resolveTelemetryPlan(
    role,
    options.settings,
    options.env ?? process.env,
    { version: options.version, instanceId: randomUUID() },
    warn,
  );
  if (plan === undefined) return OFF;
  if (running) throw new Error("telemetry is already started in this process");
  diag.setLogger(
    {
      error: (message) => options.logger.warn(`telemetry: ${message}`),
      warn: (message) => options.logger.warn(`telemetry: ${message}`),
      info: () => {},
      debug: () => {},
      verbose: () => {},
    },
    DiagLogLevel.WARN,
  );
  const sdk = await startSdk(plan, options.logger);
  running = {
    tracer: sdk.tracerProvider?.getTracer(INSTRUMENTATION_NAME, options.version),
    spanIds: sdk.spanIds,
  };
  options.logger.info(`telemetry: ${describePlan(plan)}`);
  let stopping: Promise<void> | undefined;
  return {
    active: true,
    observeMetrics: (render) => sdk.producer?.add(render),
    shutdown: () => {
      stopping ??= stopSdk(sdk, options.logger);
      return stopping;
    },
  };
}

interface StartedSdk {
  tracerProvider:
    | { getTracer(name: string, version?: string): Tracer; forceFlush(): Promise<void>; shutdown(): Promise<void> }
    | undefined;
  meterProvider: { forceFlush(): Promise<void>; shutdown(): Promise<void> } | undefined;
  producer: ExpositionProducer | undefined;
  spanIds: PresetSpanIds | undefined;
}

/** Load the SDK (only now: nothing of it loads while telemetry is off) and register the globals. */
async function startSdk(plan: TelemetryPlan, logger: Logger): Promise<StartedSdk> {
  const [{ AsyncLocalStorageContextManager }, core, { defaultResource, resourceFromAttributes }] = await Promise.all([
    import("@opentelemetry/context-async-hooks"),
    import("@opentelemetry/core"),
    import("@opentelemetry/resources"),
  ]);
  const resource = defaultResource().merge(resourceFromAttributes(plan.resource));
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(
    new core.CompositePropagator({
      propagators: [new core.W3CTraceContextPropagator(), new core.W3CBaggagePropagator()],
    }),
  );
  const { startTracing, PresetSpanIds } = await import("./tracing-sdk.ts");
  const { startMetrics } = await import("./metrics-sdk.ts");
  const spanIds = plan.traces ? new PresetSpanIds() : undefined;
  const tracerProvider = spanIds ? await startTracing(plan, resource, logger, spanIds) : undefined;
  if (tracerProvider) trace.setGlobalTracerProvider(tracerProvider);
  const started = plan.metrics ? await startMetrics(plan.metrics, resource) : undefined;
  if (started) metrics.setGlobalMeterProvider(started.meterProvider);
  return { tracerProvider, meterProvider: started?.meterProvider, producer: started?.producer, spanIds };
}

/** forceFlush, then shutdown, both providers, bounded by the budget; the globals go back to no-op. */
async function stopSdk(sdk: StartedSdk, logger: Logger): Promise<void> {
  const providers = [sdk.tracerProvider, sdk.meterProvider].filter((provider) => provider !== undefined);
  const flushed = (async () => {
    await Promise.allSettled(providers.map((provider) => provider.forceFlush()));
    await Promise.allSettled(providers.map((provider) => provider.shutdown()));
  })();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), TELEMETRY_FLUSH_MS);
  });
  const outcome = await Promise.race([flushed.then(() => "done" as const), late]);
  clearTimeout(timer);
  if (outcome === "late")
    logger.warn(
      `telemetry: the flush did not finish within ${TELEMETRY_FLUSH_MS / 1000} s; unsent telemetry is dropped`,
    );
  running = undefined;
  trace.disable();
  metrics.disable();
  propagation.disable();
  context.disable();
  diag.disable();
}

function describePlan(plan: TelemetryPlan): string {
  const spans =
    plan.traces === undefined
      ? "off"
      : plan.traces.exporter === "console"
        ? "to stderr"
        : `${plan.traces.protocol} to ${plan.traces.url}`;
  const series =
    plan.metrics === undefined
      ? "off"
      : `${plan.metrics.protocol} to ${plan.metrics.url} every ${plan.metrics.intervalMs} ms`;
  return `service ${plan.resource["service.name"]}; spans ${spans}; metrics ${series}`;
}

const HEADERS_GETTER: TextMapGetter<Headers> = {
  keys: (carrier) => [...carrier.keys()],
  get: (carrier, key) => carrier.get(key) ?? undefined,
};

/** The context an inbound request's `traceparent`, `tracestate` and `baggage` carry (root when off or absent). */
export function extractContext(headers: Headers): Context {
  if (!running) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, headers, HEADERS_GETTER);
}

/** Write the W3C headers of `from` (the active context) into an outbound request's headers; nothing when off. */
export function injectContext(headers: Record<string, string>, from: Context = context.active()): void {
  if (!running) return;
  propagation.inject(from, headers);
}
