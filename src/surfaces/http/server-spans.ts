/**
 * The HTTP server span of every request of every listener, after the OpenTelemetry semantic
 * conventions: kind SERVER, named `METHOD route` (`METHOD` alone when no route matched),
 * `http.request.method`, `url.path`, `url.scheme`, `http.route`, `http.response.status_code`,
 * `server.address` / `server.port` (from Host), `user_agent.original`; a 5xx or a throw is an
 * error. An inbound W3C `traceparent` (with `tracestate` and `baggage`) becomes the parent, and
 * the handler runs with the span active, so later spans and outbound calls are its children. An
 * event stream's span ends when the stream does (the client gone, or the server closing it).
 *
 * `serverSpans()` is the Elysia plugin guardedApp puts first on every listener, the watcher's
 * probes included (empty when telemetry is off as the listener is built); `withServerSpan` is the
 * span around one request the plugin wraps, which only calls through when telemetry is off.
 */
import { markFailed } from "../../telemetry/span-failure.ts";
import { type Attributes, type Span, SpanKind, SpanStatusCode, context, trace } from "@opentelemetry/api";
import { Elysia } from "elysia";
import { activeTracer, extractContext } from "../../telemetry/telemetry.ts";
import { requestUrl, validHost } from "./request-url.ts";
import { sseStreamOf } from "./sse-stream.ts";

/** The methods semantic conventions name; any other is `_OTHER` (a client cannot mint span names). */
const KNOWN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"]);

/** The route template Elysia matched, noted by the plugin's hooks for the span wrapping the request. */
const matchedRoutes = new WeakMap<Request, string>();

type Answer = Response | Promise<Response>;

/** Run `handle` for `request` inside its server span; `route` when the listener knows it up front. */
export function withServerSpan(request: Request, handle: () => Answer, route?: string): Answer {
  const tracer = activeTracer();
  if (tracer === undefined) return handle();
  const method = KNOWN_METHODS.has(request.method) ? request.method : "_OTHER";
  const parent = extractContext(request.headers);
  const span = tracer.startSpan(
    method === "_OTHER" ? "HTTP" : method,
    {
      kind: SpanKind.SERVER,
      attributes: requestAttributes(request, method),
    },
    parent,
  );
  const active = trace.setSpan(parent, span);
  let answer: Answer;
  try {
    answer = context.with(active, handle);
  } catch (error) {
    failed(span, request, route, error);
    throw error;
  }
  if (answer instanceof Response) return finish(span, request, route, answer);
  return answer.then(
    (response) => finish(span, request, route, response),
    (error: unknown) => {
      failed(span, request, route, error);
      throw error;
    },
  );
}

/**
 * The Elysia plugin: every request of the app inside its span, the matched route noted for its
 * name. Decided when the listener is built (each role starts telemetry before its listeners): with
 * telemetry off the plugin is empty, so the app's request path is exactly what it was without it.
 */
export function serverSpans() {
  if (activeTracer() === undefined) return new Elysia({ name: "spar.server-spans" });
  const note = ({ request, route }: { request: Request; route: string }) => {
    if (activeTracer() !== undefined && route) matchedRoutes.set(request, route);
  };
  return new Elysia({ name: "spar.server-spans" })
    .wrap(
      ((handle: (request: Request) => Answer, request: Request) => (inner: Request) =>
        withServerSpan(request, () => handle(inner))) as never,
    )
    .onTransform({ as: "global" }, note)
    .onError({ as: "global" }, note);
}

function requestAttributes(request: Request, method: string): Attributes {
  // One parse when the request's URL is whole (the usual case); requestUrl's fallbacks otherwise.
  const whole = URL.parse(request.url);
  const url = whole ?? requestUrl(request);
  const attributes: Attributes = {
    "http.request.method": method,
    "url.path": url.pathname,
    "url.scheme": url.protocol.replace(/:$/, ""),
  };
  if (method === "_OTHER") attributes["http.request.method_original"] = request.method.slice(0, 64);
  // The authority the client addressed (Host, or an in-process request's own URL); none without one.
  if (whole !== null || validHost(request.headers.get("host")) !== undefined) {
    attributes["server.address"] = url.hostname.replace(/^\[|\]$/g, "");
    attributes["server.port"] = Number(url.port) || (url.protocol === "https:" ? 443 : 80);
  }
  const agent = request.headers.get("user-agent");
  if (agent) attributes["user_agent.original"] = agent;
  return attributes;
}

function named(span: Span, request: Request, route: string | undefined): void {
  const matched = route ?? matchedRoutes.get(request);
  if (matched === undefined) return;
  span.setAttribute("http.route", matched);
  const method = KNOWN_METHODS.has(request.method) ? request.method : "HTTP";
  span.updateName(`${method} ${matched}`);
}

function finish(span: Span, request: Request, route: string | undefined, response: Response): Response {
  named(span, request, route);
  span.setAttribute("http.response.status_code", response.status);
  if (response.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  const streaming = response.body !== null && response.headers.get("content-type")?.startsWith("text/event-stream");
  if (!streaming || response.body === null) {
    span.end();
    return response;
  }
  // Our own event streams say when they end; any other stream is followed chunk by chunk.
  const sse = sseStreamOf(response.body);
  if (sse !== undefined) {
    sse.onEnd(() => span.end());
    return response;
  }
  return new Response(endsWithStream(response.body, span), {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}

function failed(span: Span, request: Request, route: string | undefined, error: unknown): void {
  named(span, request, route);
  markFailed(span, error);
  span.end();
}

/** The same bytes, read on demand (the client's pace reaches the source), the span ended with the stream. */
function endsWithStream(source: ReadableStream<Uint8Array>, span: Span): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    span.end();
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) {
            end();
            controller.close();
          } else controller.enqueue(value);
        } catch (error) {
          end();
          controller.error(error);
        }
      },
      async cancel(reason) {
        end();
        await reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
