/**
 * A local OTLP/HTTP receiver for tests: Bun.serve on port 0 taking `POST /v1/traces` and
 * `POST /v1/metrics` as protobuf (decoded with the OTLP root protobufjs generated, shipped by
 * @opentelemetry/otlp-transformer 0.216, aliased `otlp-transformer-protos`) or JSON, and keeping
 * what arrived in one shape whichever encoding carried it: spans with hex ids and plain
 * attributes, metrics with their points. Every request is counted, answered or not.
 */
import { gunzipSync } from "bun";
import root from "otlp-transformer-protos/build/src/generated/root.js";

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** "" for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  /** The OTLP status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  /** End minus start. */
  durationMs: number;
  attributes: Record<string, unknown>;
  /** The spans this one links to (other traces' included). */
  links: Array<{ traceId: string; spanId: string; attributes: Record<string, unknown> }>;
  resource: Record<string, unknown>;
  encoding: "protobuf" | "json";
}

export interface ReceivedMetric {
  name: string;
  description: string;
  type: "sum" | "gauge" | "histogram" | "other";
  monotonic: boolean;
  points: Array<{ attributes: Record<string, unknown>; value: number }>;
  resource: Record<string, unknown>;
  encoding: "protobuf" | "json";
}

export interface OtlpReceiver {
  readonly url: string;
  readonly spans: ReceivedSpan[];
  readonly metrics: ReceivedMetric[];
  /** Every request that reached the receiver, whatever its path. */
  readonly requests: Array<{ method: string; path: string; contentType: string; authorization: string | null }>;
  /** Resolves with the spans once `predicate` holds (polls), rejects after `timeoutMs`. */
  waitForSpans(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  waitForMetrics(predicate: (metrics: ReceivedMetric[]) => boolean, timeoutMs?: number): Promise<ReceivedMetric[]>;
  stop(): Promise<void>;
}

const proto = (root as any).opentelemetry.proto;
const TRACE_REQUEST = proto.collector.trace.v1.ExportTraceServiceRequest;
const METRICS_REQUEST = proto.collector.metrics.v1.ExportMetricsServiceRequest;
const TO_OBJECT = { longs: String, enums: Number, bytes: String, defaults: false, arrays: true };

type Json = Record<string, unknown>;

function hexId(value: unknown, encoding: "protobuf" | "json"): string {
  if (typeof value !== "string" || value === "") return "";
  return encoding === "json" ? value.toLowerCase() : Buffer.from(value, "base64").toString("hex");
}

function anyValue(value: Json | undefined): unknown {
  if (value === undefined) return undefined;
  if ("stringValue" in value) return value.stringValue;
  if ("intValue" in value) return Number(value.intValue);
  if ("doubleValue" in value) return Number(value.doubleValue);
  if ("boolValue" in value) return value.boolValue;
  if ("arrayValue" in value) return ((value.arrayValue as Json).values as Json[] | undefined)?.map(anyValue) ?? [];
  return value;
}

function attributes(list: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const entry of (list as Json[] | undefined) ?? []) out[String(entry.key)] = anyValue(entry.value as Json);
  return out;
}

function spansOf(request: Json, encoding: "protobuf" | "json"): ReceivedSpan[] {
  return ((request.resourceSpans as Json[] | undefined) ?? []).flatMap((resourceSpans) => {
    const resource = attributes((resourceSpans.resource as Json | undefined)?.attributes);
    return ((resourceSpans.scopeSpans as Json[] | undefined) ?? []).flatMap((scope) =>
      ((scope.spans as Json[] | undefined) ?? []).map((span) => ({
        traceId: hexId(span.traceId, encoding),
        spanId: hexId(span.spanId, encoding),
        parentSpanId: hexId(span.parentSpanId, encoding),
        name: String(span.name),
        kind: Number(span.kind ?? 0),
        statusCode: Number((span.status as Json | undefined)?.code ?? 0),
        durationMs: (Number(span.endTimeUnixNano ?? 0) - Number(span.startTimeUnixNano ?? 0)) / 1e6,
        attributes: attributes(span.attributes),
        links: ((span.links as Json[] | undefined) ?? []).map((link) => ({
          traceId: hexId(link.traceId, encoding),
          spanId: hexId(link.spanId, encoding),
          attributes: attributes(link.attributes),
        })),
        resource,
        encoding,
      })),
    );
  });
}

function pointValue(point: Json): number {
  return Number(point.asDouble ?? point.asInt ?? point.sum ?? 0);
}

function metricsOf(request: Json, encoding: "protobuf" | "json"): ReceivedMetric[] {
  return ((request.resourceMetrics as Json[] | undefined) ?? []).flatMap((resourceMetrics) => {
    const resource = attributes((resourceMetrics.resource as Json | undefined)?.attributes);
    return ((resourceMetrics.scopeMetrics as Json[] | undefined) ?? []).flatMap((scope) =>
      ((scope.metrics as Json[] | undefined) ?? []).map((metric) => {
        const body = (metric.sum ?? metric.gauge ?? metric.histogram) as Json | undefined;
        const type = metric.sum ? "sum" : metric.gauge ? "gauge" : metric.histogram ? "histogram" : "other";
        return {
          name: String(metric.name),
          description: String(metric.description ?? ""),
          type,
          monotonic: Boolean(body?.isMonotonic),
          points: ((body?.dataPoints as Json[] | undefined) ?? []).map((point) => ({
            attributes: attributes(point.attributes),
            value: pointValue(point),
          })),
          resource,
          encoding,
        } satisfies ReceivedMetric;
      }),
    );
  });
}

async function waitFor<T>(read: () => T[], predicate: (items: T[]) => boolean, timeoutMs: number, what: string) {
  const deadline = Date.now() + timeoutMs;
  while (!predicate(read())) {
    if (Date.now() > deadline) throw new Error(`the OTLP receiver did not get the expected ${what} in ${timeoutMs} ms`);
    await Bun.sleep(25); // poll
  }
  return read();
}

export function startOtlpReceiver(): OtlpReceiver {
  const spans: ReceivedSpan[] = [];
  const metrics: ReceivedMetric[] = [];
  const requests: OtlpReceiver["requests"] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      const path = new URL(request.url).pathname;
      const contentType = request.headers.get("content-type") ?? "";
      requests.push({ method: request.method, path, contentType, authorization: request.headers.get("authorization") });
      let bytes = new Uint8Array(await request.arrayBuffer());
      if (request.headers.get("content-encoding") === "gzip") bytes = gunzipSync(bytes);
      const encoding = contentType.includes("json") ? "json" : "protobuf";
      const decoder = path === "/v1/traces" ? TRACE_REQUEST : path === "/v1/metrics" ? METRICS_REQUEST : undefined;
      if (decoder === undefined) return new Response("not found", { status: 404 });
      const body: Json =
        encoding === "json"
          ? JSON.parse(new TextDecoder().decode(bytes))
          : decoder.toObject(decoder.decode(bytes), TO_OBJECT);
      if (path === "/v1/traces") spans.push(...spansOf(body, encoding));
      else metrics.push(...metricsOf(body, encoding));
      return encoding === "json"
        ? Response.json({})
        : new Response(new Uint8Array(0), { headers: { "content-type": "application/x-protobuf" } });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    spans,
    metrics,
    requests,
    waitForSpans: (predicate, timeoutMs = 10_000) => waitFor(() => spans, predicate, timeoutMs, "spans"),
    waitForMetrics: (predicate, timeoutMs = 10_000) => waitFor(() => metrics, predicate, timeoutMs, "metrics"),
    stop: async () => {
      await server.stop(true);
    },
  };
}
