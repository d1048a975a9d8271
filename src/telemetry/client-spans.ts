/**
 * The HTTP client span of every outbound request, after the OpenTelemetry semantic conventions:
 * kind CLIENT, named after the method (`POST`; `HTTP` for a method outside the standard set),
 * `http.request.method`, `url.full` (credentials and query values replaced by `REDACTED`, no
 * fragment), `server.address`, `server.port`, `http.response.status_code`; a 4xx/5xx answer or a
 * transport error is an error (`error.type`). The request carries the W3C headers of that span
 * (`traceparent`, `tracestate` and, unless the caller says otherwise, `baggage`), so the server's
 * span is its child. Request headers are never recorded, so a bearer never reaches a span.
 *
 * `clientSpan` wraps one send of a caller that builds its own request (the outbound guard's hops);
 * `tracedFetch` is `fetch` for the operator-configured destinations (the watcher's sinks and API
 * server, MCP HTTP servers, pricing sources). With telemetry off both only call through: no span,
 * no header added (unless a thread without an SDK was handed a carrier: `withTraceCarrier`).
 */
import { markFailed } from "./span-failure.ts";
import { AsyncLocalStorage } from "node:async_hooks";
import { type Attributes, type Span, SpanKind, SpanStatusCode, context, trace } from "@opentelemetry/api";
import type { TraceCarrier } from "../core/session-store.ts";
import { validTraceCarrier } from "../core/trace-carrier.ts";
import { activeTracer, injectContext } from "./telemetry.ts";

/** The trace context a thread without an SDK was handed for the work it runs (withTraceCarrier). */
const carried = new AsyncLocalStorage<TraceCarrier>();

/**
 * Run `work` with `carrier` as the trace context of its outbound calls, in a thread that runs no
 * SDK (the tool-host worker, handed the `execute_tool` span's carrier by the main thread): those
 * calls then send its `traceparent` / `tracestate`, so the server's span is a child of that span;
 * no client span is made there. An absent or malformed carrier: `work` alone.
 */
export function withTraceCarrier<T>(carrier: TraceCarrier | undefined, work: () => T): T {
  const valid = validTraceCarrier(carrier);
  return valid === undefined ? work() : carried.run(valid, work);
}

/**
 * A tool server request's `params._meta` with the handed context's `traceparent` / `tracestate`
 * (the MCP conventions carry trace context there, whatever the transport: a stdio server sees it
 * too), the caller's own keys kept. No carrier: `meta` as it was.
 */
export function metaWithTrace(
  meta: Record<string, unknown> | undefined,
  carrier: TraceCarrier | undefined,
): Record<string, unknown> | undefined {
  const valid = validTraceCarrier(carrier);
  return valid === undefined ? meta : { ...valid, ...meta };
}

/** The handed carrier's headers; none outside withTraceCarrier. */
function carriedHeaders(): Record<string, string> {
  const carrier = carried.getStore();
  return carrier === undefined ? {} : { ...carrier };
}

/** The methods semantic conventions name; any other is `_OTHER`. */
const KNOWN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"]);

export interface ClientSpanOptions {
  /** Send the W3C `baggage` too (default true); false for URLs a model or a remote caller chose. */
  baggage?: boolean;
  /** More attributes (`network.peer.address`, `http.request.resend_count`). */
  attributes?: Attributes;
  /** Span (and propagate) only under an active span: a background call (a watch) then stays out of traces. */
  parentRequired?: boolean;
}

/** `url` as `url.full` may show it: userinfo and every query value `REDACTED`, no fragment. */
export function redactedUrlFull(url: URL): string {
  const copy = new URL(url.href);
  if (copy.username !== "" || copy.password !== "") {
    copy.username = "REDACTED";
    copy.password = "REDACTED";
  }
  copy.hash = "";
  if (copy.search !== "") {
    const names = [...new URLSearchParams(copy.search).keys()];
    copy.search = names.map((name) => `${encodeURIComponent(name)}=REDACTED`).join("&");
  }
  return copy.href;
}

function requestAttributes(method: string, original: string, url: URL): Attributes {
  const attributes: Attributes = {
    "http.request.method": method,
    "url.full": redactedUrlFull(url),
    "server.address": url.hostname.replace(/^\[|\]$/g, ""),
    "server.port": Number(url.port) || (url.protocol === "https:" ? 443 : 80),
  };
  if (method === "_OTHER") attributes["http.request.method_original"] = original.slice(0, 64);
  return attributes;
}

function answered(span: Span, response: Response): Response {
  span.setAttribute("http.response.status_code", response.status);
  if (response.status >= 400) {
    span.setAttribute("error.type", String(response.status));
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
  return response;
}

function failed(span: Span, error: unknown): void {
  span.setAttribute("error.type", error instanceof Error ? error.name : "Error");
  markFailed(span, error);
  span.end();
}

/**
 * Run `send` inside a CLIENT span for `method url`, handing it the W3C headers to add to its
 * request (none when telemetry is off). The span ends when the response's head arrives (a stream's
 * body is not waited for) or `send` rejects.
 */
export async function clientSpan(
  method: string,
  url: URL,
  send: (traceHeaders: Record<string, string>) => Promise<Response>,
  options: ClientSpanOptions = {},
): Promise<Response> {
  const tracer = activeTracer();
  if (tracer === undefined) return send(carriedHeaders());
  if (options.parentRequired && trace.getSpan(context.active()) === undefined) return send({});
  const upper = method.toUpperCase();
  const known = KNOWN_METHODS.has(upper) ? upper : "_OTHER";
  const span = tracer.startSpan(known === "_OTHER" ? "HTTP" : known, {
    kind: SpanKind.CLIENT,
    attributes: { ...requestAttributes(known, method, url), ...options.attributes },
  });
  const traceHeaders: Record<string, string> = {};
  injectContext(traceHeaders, trace.setSpan(context.active(), span));
  if (options.baggage === false) delete traceHeaders.baggage;
  let response: Response;
  try {
    response = await send(traceHeaders);
  } catch (error) {
    failed(span, error);
    throw error;
  }
  return answered(span, response);
}

/** `fetch` inside a client span, the W3C headers added to the request's own; plain `fetch` when off. */
export function tracedFetch(input: string | URL, init: RequestInit = {}, options?: ClientSpanOptions) {
  if (activeTracer() === undefined && carried.getStore() === undefined) return fetch(input, init);
  const url = new URL(input);
  return clientSpan(
    init.method ?? "GET",
    url,
    (traceHeaders) => {
      const headers = new Headers(init.headers);
      for (const [name, value] of Object.entries(traceHeaders)) headers.set(name, value);
      return fetch(input, { ...init, headers });
    },
    options,
  );
}
