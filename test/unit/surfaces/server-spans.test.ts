/**
 * The HTTP server spans (src/surfaces/http/server-spans.ts), in process over guardedApp with the
 * SDK exporting to a local OTLP receiver: name and semantic-convention attributes, an inbound
 * traceparent adopted, a refused request spanned too, an event stream's span ending with the
 * stream, the plain-handler wrapper; and with telemetry off, nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SpanKind } from "@opentelemetry/api";
import { guardedApp } from "../../../src/surfaces/http/guarded-app.ts";
import { LOCAL_CALLER } from "../../../src/surfaces/http/caller-auth.ts";
import { withServerSpan } from "../../../src/surfaces/http/server-spans.ts";
import { SseStreamGroup } from "../../../src/surfaces/http/sse-stream.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { activeTracer, startTelemetry } from "../../../src/telemetry/telemetry.ts";
import type { OtlpReceiver } from "../../support/otlp-receiver.ts";
import { type InProcessTelemetry, startInProcessTelemetry } from "../../support/in-process-telemetry.ts";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = "00f067aa0ba902b7";
const STREAM_MS = 300;

let receiver: OtlpReceiver;
let telemetry: InProcessTelemetry;

function app() {
  return guardedApp({
    transport: { token: "secret", readonly: false },
    resolveCaller: () => LOCAL_CALLER,
    publicPaths: new Set(["/healthz"]),
  })
    .get("/healthz", () => "ok")
    .get("/items/:id", ({ params }) => ({ id: params.id }))
    .get("/boom", () => {
      throw new Error("handler failed");
    })
    .get("/stream", () => {
      const encoder = new TextEncoder();
      const body = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(encoder.encode(": open\n\n"));
          await Bun.sleep(STREAM_MS); // time under test: the span covers the whole stream
          controller.enqueue(encoder.encode("data: done\n\n"));
          controller.close();
        },
      });
      return new Response(body, { headers: { "content-type": "text/event-stream" } });
    })
    .get("/sse", () => {
      const stream = sseGroup.open({ maxQueued: 16, lowWater: 4 });
      stream.write(new TextEncoder().encode("data: first\n\n"));
      // Time under test: the span covers the whole stream.
      setTimeout(() => {
        stream.write(new TextEncoder().encode("data: done\n\n"));
        stream.close("done");
      }, STREAM_MS);
      sseResponses.push(stream.response);
      return stream.response;
    });
}

const sseGroup = new SseStreamGroup();
/** The responses the /sse route made, to check the span handed them on as they were. */
const sseResponses: Response[] = [];

function request(path: string, headers: Record<string, string> = {}): Request {
  return new Request(`http://127.0.0.1:7777${path}`, { headers: { authorization: "Bearer secret", ...headers } });
}

async function spanNamed(name: string) {
  const spans = await receiver.waitForSpans((all) => all.some((span) => span.name === name));
  const span = spans.find((candidate) => candidate.name === name);
  if (!span) throw new Error(`no span ${name}`);
  return span;
}

describe("with telemetry on", () => {
  beforeAll(async () => {
    telemetry = await startInProcessTelemetry("agent");
    receiver = telemetry.receiver;
  });

  afterAll(async () => {
    await telemetry.stop();
  });

  test("a routed request: SERVER span `GET /items/:id` with the semantic-convention attributes", async () => {
    const response = await app().handle(request("/items/42", { "user-agent": "probe/1" }));
    expect(response.status).toBe(200);
    const span = await spanNamed("GET /items/:id");
    expect(span.kind).toBe(SpanKind.SERVER + 1);
    expect(span.attributes).toMatchObject({
      "http.request.method": "GET",
      "url.path": "/items/42",
      "url.scheme": "http",
      "http.route": "/items/:id",
      "http.response.status_code": 200,
      "server.address": "127.0.0.1",
      "server.port": 7777,
      "user_agent.original": "probe/1",
    });
  });

  test("an inbound traceparent is the parent: same trace id, parent span id from the header", async () => {
    await app().handle(request("/items/7", { traceparent: `00-${TRACE_ID}-${PARENT}-01` }));
    const spans = await receiver.waitForSpans((all) => all.some((span) => span.traceId === TRACE_ID));
    const adopted = spans.find((span) => span.traceId === TRACE_ID);
    expect(adopted?.parentSpanId).toBe(PARENT);
    expect(adopted?.name).toBe("GET /items/:id");
  });

  test("a request the token guard refuses before routing is spanned with its status and no route", async () => {
    const response = await app().handle(new Request("http://127.0.0.1:7777/items/9?refused=1"));
    expect(response.status).toBe(401);
    const spans = await receiver.waitForSpans((all) =>
      all.some(
        (span) => span.attributes["url.path"] === "/items/9" && span.attributes["http.response.status_code"] === 401,
      ),
    );
    const refused = spans.find((span) => span.attributes["http.response.status_code"] === 401);
    expect(refused?.name).toBe("GET");
    expect(refused?.attributes["http.route"]).toBeUndefined();
  });

  test("a handler's failure is a 500 on an error span", async () => {
    const response = await app().handle(request("/boom"));
    expect(response.status).toBe(500);
    const span = await spanNamed("GET /boom");
    expect(span.attributes["http.response.status_code"]).toBe(500);
  });

  test("an event stream's span ends when the stream does, not when its headers go", async () => {
    const response = await app().handle(request("/stream"));
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    expect(await response.text()).toContain("data: done");
    const span = await spanNamed("GET /stream");
    expect(span.durationMs).toBeGreaterThanOrEqual(STREAM_MS - 20);
  });

  test("our own event stream (SseStream) ends its span as it closes, its body handed on unwrapped", async () => {
    const response = await app().handle(request("/sse"));
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    // The span listens for the stream's end; it does not re-wrap the direct stream in a JS reader.
    expect(response.body).toBe(sseResponses.at(-1)?.body ?? null);
    const text = await response.text();
    expect(text).toContain("data: first");
    expect(text).toContain("data: done");
    const span = await spanNamed("GET /sse");
    expect(span.durationMs).toBeGreaterThanOrEqual(STREAM_MS - 20);
  });

  test("a client that hangs up on our own event stream ends its span at once", async () => {
    const before = receiver.spans.filter((span) => span.name === "GET /sse").length;
    const response = await app().handle(request("/sse"));
    const reader = response.body?.getReader();
    await reader?.read();
    await reader?.cancel("client gone");
    const spans = await receiver.waitForSpans((all) => all.filter((span) => span.name === "GET /sse").length > before);
    const hungUp = spans.filter((span) => span.name === "GET /sse").slice(before);
    expect(hungUp.some((span) => span.durationMs < STREAM_MS - 20)).toBe(true);
  });

  test("a client that hangs up ends the stream's span too", async () => {
    const response = await app().handle(request("/stream", { "x-case": "hang-up" }));
    const reader = response.body?.getReader();
    await reader?.read();
    await reader?.cancel("client gone");
    const spans = await receiver.waitForSpans((all) => all.filter((span) => span.name === "GET /stream").length >= 2);
    const early = spans.filter((span) => span.name === "GET /stream").find((span) => span.durationMs < STREAM_MS - 20);
    expect(early).toBeDefined();
  });

  test("a plain fetch handler gets the same span through withServerSpan", async () => {
    await withServerSpan(new Request("http://127.0.0.1:9090/readyz"), () => new Response("ok"), "/readyz");
    const span = await spanNamed("GET /readyz");
    expect(span.attributes).toMatchObject({ "http.route": "/readyz", "http.response.status_code": 200 });
  });

  test("a method outside the known set is _OTHER: a client cannot mint span names", async () => {
    // Bun's Request turns an unknown method into GET; a request as the wire could carry one.
    const brew = { method: "BREW", url: "http://127.0.0.1:9090/x", headers: new Headers() } as unknown as Request;
    await withServerSpan(brew, () => new Response("", { status: 405 }));
    const spans = await receiver.waitForSpans((all) =>
      all.some((span) => span.attributes["http.request.method"] === "_OTHER"),
    );
    const other = spans.find((span) => span.attributes["http.request.method"] === "_OTHER");
    expect(other?.name).toBe("HTTP");
    expect(other?.attributes["http.request.method_original"]).toBe("BREW");
  });
});

describe("with telemetry off", () => {
  test("nothing configured: no tracer, and a request is answered without a span", async () => {
    const off = await startTelemetry("agent", {
      settings: {},
      version: "test",
      logger: createLogger("error"),
      env: {},
    });
    expect(off.active).toBe(false);
    expect(activeTracer()).toBeUndefined();
    const response = await app().handle(request("/items/1"));
    expect(response.status).toBe(200);
  });
});
