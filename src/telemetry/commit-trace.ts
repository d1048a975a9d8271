/**
 * The store's group commits as spans (issue 18 item 2, D303), after the database semantic
 * conventions: `COMMIT <store>` (kind CLIENT), `db.system.name`, `db.operation.name`,
 * `db.operation.batch.size` (the writes it carried), and spar's `spar.store.rows` and
 * `spar.store.bytes` (event payload bytes). A commit carries writes of many requests and turns:
 * its parent is the first write's span, the others are links (at most MAX_LINKS). A commit none
 * of whose writes ran under a span (background work) makes no span, so idle stores add no root
 * traces. With telemetry off nothing is captured or started.
 */
import {
  type Link,
  type Span,
  SpanKind,
  SpanStatusCode,
  type SpanContext,
  TraceFlags,
  context,
  trace,
} from "@opentelemetry/api";
import { activeTracer } from "./telemetry.ts";

const MAX_LINKS = 16;

/**
 * The sampled span a write is submitted under (tracing on only); kept on the write for its
 * commit's span. An unsampled one is not kept: a commit span under it would not be recorded.
 */
export function writeContext(): SpanContext | undefined {
  if (activeTracer() === undefined) return undefined;
  const active = trace.getSpanContext(context.active());
  return active !== undefined && (active.traceFlags & TraceFlags.SAMPLED) !== 0 ? active : undefined;
}

export interface CommitMeasure {
  rows: number;
  bytes: number;
  /** False when the commit failed (every write in it refused). */
  committed: boolean;
}

/** A commit span for a batch of writes, or undefined when none of them was traced. */
export function commitSpan(
  store: "sqlite" | "postgresql",
  name: string,
  writes: readonly (SpanContext | undefined)[],
): { end(measure: CommitMeasure): void } | undefined {
  const tracer = activeTracer();
  if (tracer === undefined) return undefined;
  const traced = writes.filter((write) => write !== undefined);
  const [parent, ...others] = traced;
  if (parent === undefined) return undefined;
  const links: Link[] = others.slice(0, MAX_LINKS).map((linked) => ({ context: linked }));
  const span: Span = tracer.startSpan(
    `COMMIT ${name}`,
    {
      kind: SpanKind.CLIENT,
      links,
      attributes: {
        "db.system.name": store,
        "db.operation.name": "COMMIT",
        "db.namespace": name,
        "db.operation.batch.size": writes.length,
      },
    },
    trace.setSpanContext(context.active(), parent),
  );
  return {
    end(measure) {
      span.setAttributes({ "spar.store.rows": measure.rows, "spar.store.bytes": measure.bytes });
      if (!measure.committed) span.setStatus({ code: SpanStatusCode.ERROR, message: "the commit failed" });
      span.end();
    },
  };
}
