/**
 * The HTTP client spans (src/telemetry/client-spans.ts) of every outbound path, in process with the
 * SDK exporting to a local OTLP receiver and a local server recording the headers it gets: plain
 * `tracedFetch` (the watcher's webhook sink), the outbound guard's hops (fetch_url, the A2A client) and
 * an MCP HTTP server's requests carry a traceparent whose trace id is the caller's and whose parent
 * is the CLIENT span, named and attributed after the semantic conventions; with telemetry off no
 * header is added and no span made, unless a carrier was handed in (the tool-host worker's case).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Span, SpanKind, context, propagation, trace } from "@opentelemetry/api";
import { ServerPool } from "../../../src/mcp/server-pool.ts";
import { parseOutboundAllowList } from "../../../src/net/outbound-allow-list.ts";
import { OutboundGuard } from "../../../src/net/outbound-guard.ts";
import { redactedUrlFull, tracedFetch, withTraceCarrier } from "../../../src/telemetry/client-spans.ts";
import { activeTracer } from "../../../src/telemetry/telemetry.ts";
import { fetchUrlTool } from "../../../src/tools/fetch-url-tool.ts";
import { WebhookSink } from "../../../src/watcher/sinks/webhook-sink.ts";
import { recordingMcpServer } from "../../fixtures/mcp/recording-http-server.ts";
import { tempDir } from "../../support/daemon.ts";
import type { OtlpReceiver, ReceivedSpan } from "../../support/otlp-receiver.ts";
import { type InProcessTelemetry, startInProcessTelemetry } from "../../support/in-process-telemetry.ts";

const CLIENT = SpanKind.CLIENT + 1;
const ERROR = 2;
const SECRET = "tok-5e3a9b";

/** A server recording every request's headers: `/ok`, `/fail` (503), `/hop` (302 to /ok). */
function recordingServer() {
  const seen: Array<{ path: string; headers: Headers }> = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(request) {
      const path = new URL(request.url).pathname;
      seen.push({ path, headers: request.headers });
      if (path === "/fail") return new Response("down", { status: 503 });
      if (path === "/hop") return new Response(null, { status: 302, headers: { location: "/ok" } });
      return new Response("fine");
    },
  });
  return { base: `http://127.0.0.1:${server.port}`, port: server.port, seen, stop: () => server.stop(true) };
}

let target: ReturnType<typeof recordingServer>;

beforeAll(() => {
  target = recordingServer();
});

afterAll(() => {
  target.stop();
});

const toolContextFor = (outbound: OutboundGuard) => ({
  root: tempDir(),
  signal: AbortSignal.timeout(5000),
  capBytes: 1024,
  timeoutMs: 5000,
  env: {},
  outbound,
});

const guard = () => {
  const allow = parseOutboundAllowList(["127.0.0.1"]);
  if (!allow.ok) throw new Error("allow list");
  return new OutboundGuard({ allow: allow.value });
};

describe("with telemetry off", () => {
  test("no traceparent, tracestate or baggage is added and no tracer runs", async () => {
    expect(activeTracer()).toBeUndefined();
    const before = target.seen.length;
    await tracedFetch(`${target.base}/ok`, { headers: { authorization: `Bearer ${SECRET}` } });
    await guard().fetch(`${target.base}/ok`, { signal: AbortSignal.timeout(5000), baggage: true });
    const requests = target.seen.slice(before);
    expect(requests).toHaveLength(2);
    for (const { headers } of requests) {
      expect(headers.get("traceparent")).toBeNull();
      expect(headers.get("tracestate")).toBeNull();
      expect(headers.get("baggage")).toBeNull();
    }
    expect(requests[0]?.headers.get("authorization")).toBe(`Bearer ${SECRET}`);
  });
});

describe("without an SDK in this thread (the tool-host worker), a carrier handed in", () => {
  const CARRIER = { traceparent: `00-${"ab".repeat(16)}-${"cd".repeat(8)}-01`, tracestate: "vendor=1" };

  test("is what fetch_url's request and tracedFetch's carry, baggage never; outside it, nothing", async () => {
    const before = target.seen.length;
    await withTraceCarrier(CARRIER, async () => {
      await fetchUrlTool.run({ url: `${target.base}/ok` }, toolContextFor(guard()));
      await tracedFetch(`${target.base}/ok`);
    });
    await tracedFetch(`${target.base}/ok`);
    const requests = target.seen.slice(before);
    expect(requests.map((request) => request.headers.get("traceparent"))).toEqual([
      CARRIER.traceparent,
      CARRIER.traceparent,
      null,
    ]);
    expect(requests[0]?.headers.get("tracestate")).toBe("vendor=1");
    expect(requests.every((request) => request.headers.get("baggage") === null)).toBe(true);
  });

  test("reaches every request of an MCP HTTP server's call", async () => {
    const server = await recordingMcpServer();
    const pool = new ServerPool(process.env, tempDir());
    try {
      await pool.configure({
        servers: [{ name: "rec", transport: "http", url: server.url, overrides: {} }],
        timeouts: { startMs: 10_000, callMs: 10_000, stopGraceMs: 1000, retryMs: 30_000 },
      });
      await withTraceCarrier(CARRIER, () => pool.call("rec", "ping", {}, AbortSignal.timeout(10_000)));
    } finally {
      await pool.stopAll();
      server.stop();
    }
    expect(server.traceparents.length).toBeGreaterThanOrEqual(3);
    expect(server.traceparents.every((header) => header === CARRIER.traceparent)).toBe(true);
  });

  test("a malformed carrier is ignored", async () => {
    const before = target.seen.length;
    await withTraceCarrier({ traceparent: "00-zz-11-01" }, () => tracedFetch(`${target.base}/ok`));
    expect(target.seen[before]?.headers.get("traceparent")).toBeNull();
  });
});

describe("with telemetry on", () => {
  let receiver: OtlpReceiver;
  let telemetry: InProcessTelemetry;

  beforeAll(async () => {
    telemetry = await startInProcessTelemetry("agent");
    receiver = telemetry.receiver;
  });

  afterAll(async () => {
    await telemetry.stop();
  });

  /** Run `work` under a caller span (with baggage `tenant=blue`); the span, once `work` is done. */
  async function asCaller(work: () => Promise<unknown>): Promise<Span> {
    const tracer = activeTracer();
    if (!tracer) throw new Error("telemetry is not on");
    const span = tracer.startSpan("caller");
    const baggage = propagation.createBaggage({ tenant: { value: "blue" } });
    const active = propagation.setBaggage(trace.setSpan(context.active(), span), baggage);
    await context.with(active, work);
    span.end();
    return span;
  }

  async function clientSpansOf(caller: Span, count: number): Promise<ReceivedSpan[]> {
    const { traceId, spanId } = caller.spanContext();
    const mine = (all: ReceivedSpan[]) =>
      all.filter((span) => span.traceId === traceId && span.kind === CLIENT && span.parentSpanId === spanId);
    return mine(await receiver.waitForSpans((all) => mine(all).length >= count));
  }

  /** The traceparent's trace id and parent id. */
  function parentOf(headers: Headers | undefined): { traceId: string; parent: string } {
    const [, traceId = "", parent = ""] = (headers?.get("traceparent") ?? "").split("-");
    return { traceId, parent };
  }

  test("tracedFetch: the request carries the client span's traceparent and the baggage; the span has the semconv attributes", async () => {
    const before = target.seen.length;
    const caller = await asCaller(() =>
      tracedFetch(`${target.base}/ok?token=${SECRET}`, {
        method: "POST",
        headers: { authorization: `Bearer ${SECRET}` },
        body: "{}",
      }),
    );
    const [span] = await clientSpansOf(caller, 1);
    const request = target.seen[before];
    expect(parentOf(request?.headers)).toEqual({ traceId: caller.spanContext().traceId, parent: span?.spanId ?? "" });
    expect(request?.headers.get("baggage")).toBe("tenant=blue");
    expect(request?.headers.get("authorization")).toBe(`Bearer ${SECRET}`);
    expect(span?.name).toBe("POST");
    expect(span?.attributes).toEqual({
      "http.request.method": "POST",
      "url.full": `${target.base}/ok?token=REDACTED`,
      "server.address": "127.0.0.1",
      "server.port": target.port,
      "http.response.status_code": 200,
    });
    expect(JSON.stringify(span)).not.toContain(SECRET);
  });

  test("the watcher's webhook sink: its open carries the caller's trace, its bearer stays out of the span", async () => {
    const before = target.seen.length;
    const sink = new WebhookSink({ sinkUrl: target.base, token: SECRET });
    const caller = await asCaller(() => sink.open({ kind: "cluster-event" }));
    const [span] = await clientSpansOf(caller, 1);
    const request = target.seen[before];
    expect(request?.path).toBe("/incidents");
    expect(parentOf(request?.headers)).toEqual({ traceId: caller.spanContext().traceId, parent: span?.spanId ?? "" });
    expect(span?.attributes["url.full"]).toBe(`${target.base}/incidents`);
    expect(JSON.stringify(span)).not.toContain(SECRET);
  });

  test("a 5xx answer and a refused connection are error spans with error.type", async () => {
    const caller = await asCaller(async () => {
      await tracedFetch(`${target.base}/fail`);
      await tracedFetch("http://127.0.0.1:1/nothing").catch(() => undefined);
    });
    const spans = await clientSpansOf(caller, 2);
    const failed = spans.find((span) => span.attributes["http.response.status_code"] === 503);
    expect(failed).toMatchObject({ statusCode: ERROR, attributes: { "error.type": "503" } });
    const refused = spans.find((span) => span.attributes["server.port"] === 1);
    expect(refused?.statusCode).toBe(ERROR);
    expect(refused?.attributes["error.type"]).toBeString();
    expect(refused?.attributes["http.response.status_code"]).toBeUndefined();
  });

  test("fetch_url through the guard: one client span per hop, each request its own traceparent, no baggage to a URL the model chose", async () => {
    const before = target.seen.length;
    const caller = await asCaller(() =>
      fetchUrlTool.run(
        { url: `${target.base}/hop` },
        {
          root: tempDir(),
          signal: AbortSignal.timeout(5000),
          capBytes: 1024,
          timeoutMs: 5000,
          env: {},
          outbound: guard(),
        },
      ),
    );
    const spans = await clientSpansOf(caller, 2);
    const requests = target.seen.slice(before);
    expect(requests.map((request) => request.path)).toEqual(["/hop", "/ok"]);
    const first = spans.find((span) => span.attributes["url.full"] === `${target.base}/hop`);
    const second = spans.find((span) => span.attributes["url.full"] === `${target.base}/ok`);
    expect(first?.attributes).toMatchObject({ "http.response.status_code": 302, "network.peer.address": "127.0.0.1" });
    expect(second?.attributes).toMatchObject({ "http.response.status_code": 200, "http.request.resend_count": 1 });
    const traceId = caller.spanContext().traceId;
    expect(parentOf(requests[0]?.headers)).toEqual({ traceId, parent: first?.spanId ?? "" });
    expect(parentOf(requests[1]?.headers)).toEqual({ traceId, parent: second?.spanId ?? "" });
    for (const request of requests) expect(request.headers.get("baggage")).toBeNull();
  });

  test("the A2A client's guard call (baggage: true) carries the baggage to the first origin", async () => {
    const before = target.seen.length;
    await asCaller(() => guard().fetch(`${target.base}/ok`, { signal: AbortSignal.timeout(5000), baggage: true }));
    expect(target.seen[before]?.headers.get("baggage")).toBe("tenant=blue");
  });

  test("an MCP HTTP server gets the caller's trace id on every request of a call, each a client span", async () => {
    const server = await recordingMcpServer();
    const pool = new ServerPool(process.env, tempDir());
    let answer: unknown;
    let caller: Span | undefined;
    try {
      await pool.configure({
        servers: [{ name: "rec", transport: "http", url: server.url, overrides: {} }],
        timeouts: { startMs: 10_000, callMs: 10_000, stopGraceMs: 1000, retryMs: 30_000 },
      });
      caller = await asCaller(async () => {
        answer = await pool.call("rec", "ping", {}, AbortSignal.timeout(10_000));
      });
    } finally {
      // Stopping ends the server's event stream (a GET whose head comes with its first event).
      await pool.stopAll();
      server.stop();
    }
    expect(JSON.stringify(answer)).toContain("pong");
    const traceId = caller.spanContext().traceId;
    expect(server.traceparents.length).toBeGreaterThanOrEqual(3);
    expect(server.traceparents.every((header) => header.split("-")[1] === traceId)).toBe(true);
    const spans = await clientSpansOf(caller, server.traceparents.length);
    const ids = spans.map((span) => span.spanId);
    for (const header of server.traceparents) expect(ids).toContain(header.split("-")[2] ?? "");
    expect(spans.every((span) => span.attributes["url.full"] === server.url)).toBe(true);
  });
});

describe("url.full", () => {
  test("credentials and every query value are REDACTED, the fragment dropped", () => {
    expect(redactedUrlFull(new URL("https://user:pw@example.com:8443/a/b?x=1&sig=abc#frag"))).toBe(
      "https://REDACTED:REDACTED@example.com:8443/a/b?x=REDACTED&sig=REDACTED",
    );
    expect(redactedUrlFull(new URL("http://example.com/plain"))).toBe("http://example.com/plain");
  });
});
