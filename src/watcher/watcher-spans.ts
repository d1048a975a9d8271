/**
 * The watcher's pipeline as spans (issue 18, docs/telemetry.md "The watcher's trace"): one trace
 * per cluster event, rooted at `watcher event` (what became of it: filtered, deduped, opened, a
 * storm), with `watcher incident` for the incident it opens and `watcher sink open` / `watcher sink
 * append` for each delivery attempt, whose HTTP client spans carry the trace to the daemon or the
 * webhook receiver. A retry the delivery queue makes later runs in the context the payload was
 * queued in, so it joins the incident's trace. `TracedSink` wraps the network sink, under the
 * queue. With telemetry off nothing here starts a span.
 */
import { markFailed } from "../telemetry/span-failure.ts";
import { type Attributes, type Link, type Span, SpanStatusCode, context, trace } from "@opentelemetry/api";
import { activeTracer } from "../telemetry/telemetry.ts";
import type { AppendResult, IncidentSink, OpenBinding, OpenResult } from "./core/sink.ts";
import type { Signal } from "./core/signal.ts";

/** Incidents whose span a follow-up may still link to; the oldest forgotten past this. */
const REMEMBERED_INCIDENTS = 10_000;

export interface WatcherSpanOptions {
  /** Start a trace of its own whatever is active (a cluster event has no caller). */
  root?: boolean;
  links?: Link[] | undefined;
}

/** Run `work` inside a span named `name`; `work` alone when telemetry is off. */
export async function inWatcherSpan<T>(
  name: string,
  attributes: Attributes,
  work: (span: Span | undefined) => Promise<T>,
  options: WatcherSpanOptions = {},
): Promise<T> {
  const tracer = activeTracer();
  if (tracer === undefined) return work(undefined);
  const span = tracer.startSpan(name, {
    attributes,
    ...(options.root ? { root: true } : {}),
    ...(options.links ? { links: options.links } : {}),
  });
  try {
    return await context.with(trace.setSpan(context.active(), span), () => work(span));
  } catch (error) {
    markFailed(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** The attributes naming a signal's object and reason (never its message: it may quote anything). */
export function signalAttributes(signal: Signal, cluster: string): Attributes {
  return {
    "k8s.cluster.name": cluster,
    "k8s.namespace.name": signal.namespace,
    "spar.watcher.object.kind": signal.kindOfObject,
    "spar.watcher.object.name": signal.name,
    "spar.watcher.signal.kind": signal.kind,
    "spar.watcher.reason": signal.reason,
    "spar.watcher.severity": signal.severity,
  };
}

/**
 * The span context of each incident's `watcher incident` span by dedup key, so its `resolved`
 * follow-up (minutes or hours later, in another trace) links back to it. In memory, bounded.
 */
export class IncidentLinks {
  private readonly spans = new Map<string, Link>();

  remember(key: string, span: Span | undefined): void {
    if (span === undefined) return;
    this.spans.delete(key);
    this.spans.set(key, { context: span.spanContext() });
    if (this.spans.size > REMEMBERED_INCIDENTS) {
      const oldest = this.spans.keys().next().value;
      if (oldest !== undefined) this.spans.delete(oldest);
    }
  }

  /** An incident's open in its `watcher incident` span (remembered for its follow-ups); `open` answers the session id. */
  inIncidentSpan(
    key: string,
    attributes: Attributes,
    open: () => Promise<string | undefined>,
  ): Promise<string | undefined> {
    if (activeTracer() === undefined) return open();
    return inWatcherSpan("watcher incident", attributes, async (span) => {
      this.remember(key, span);
      const id = await open();
      if (id === undefined) span?.setStatus({ code: SpanStatusCode.ERROR, message: "no session was opened" });
      else span?.setAttribute("spar.session.id", id);
      return id;
    });
  }

  linksFor(key: string): Link[] | undefined {
    const link = this.spans.get(key);
    return link === undefined ? undefined : [link];
  }
}

/** A signal's handling: a root `watcher event` span whose outcome (`filtered`, `opened`, ...) is an attribute. */
export function inEventSpan<T extends string>(attributes: Attributes, work: () => Promise<T>): Promise<T> {
  if (activeTracer() === undefined) return work();
  return inWatcherSpan(
    "watcher event",
    attributes,
    async (span) => {
      const outcome = await work();
      span?.setAttribute("spar.watcher.outcome", outcome);
      return outcome;
    },
    { root: true },
  );
}

/** Mark `span` failed with `error` (a sink's failure description). */
function failedWith(span: Span | undefined, error: string | undefined, permanent: boolean | undefined): void {
  if (span === undefined || error === undefined) return;
  span.setAttribute("error.type", permanent ? "permanent" : "retryable");
  span.setStatus({ code: SpanStatusCode.ERROR, message: error });
}

/** The network sink with each call in a span (`watcher sink open`, `watcher sink append`). */
export class TracedSink implements IncidentSink {
  readonly name: string;
  readonly targetSession: string | undefined;

  constructor(private readonly inner: IncidentSink) {
    this.name = inner.name;
    this.targetSession = inner.targetSession;
  }

  open(payload: object, binding?: OpenBinding): Promise<OpenResult> {
    if (activeTracer() === undefined) return this.inner.open(payload, binding);
    return inWatcherSpan("watcher sink open", { "spar.watcher.sink": this.name }, async (span) => {
      const result = await this.inner.open(payload, binding);
      if (result.id !== undefined) span?.setAttribute("spar.session.id", result.id);
      failedWith(span, result.error, result.permanent);
      return result;
    });
  }

  append(id: string, payload: object): Promise<AppendResult> {
    if (activeTracer() === undefined) return this.inner.append(id, payload);
    const attributes = { "spar.watcher.sink": this.name, "spar.session.id": id };
    return inWatcherSpan("watcher sink append", attributes, async (span) => {
      const result = await this.inner.append(id, payload);
      if (!result.ok) failedWith(span, result.error, result.permanent);
      return result;
    });
  }
}
