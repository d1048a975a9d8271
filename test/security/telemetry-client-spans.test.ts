/**
 * What outbound calls' client spans and trace headers must not give away, attacked in process with
 * the SDK exporting to a local OTLP receiver: a bearer in Authorization, credentials in the URL's
 * userinfo and secrets in its query string never reach an exported span; the caller's W3C baggage
 * never goes to a URL the model chose (fetch_url), nor past a redirect to another origin; and the
 * guard still refuses a forbidden address with tracing on, sending nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Span, context, propagation, trace } from "@opentelemetry/api";
import { parseOutboundAllowList } from "../../src/net/outbound-allow-list.ts";
import { OutboundGuard } from "../../src/net/outbound-guard.ts";
import { tracedFetch } from "../../src/telemetry/client-spans.ts";
import { activeTracer } from "../../src/telemetry/telemetry.ts";
import { fetchUrlTool } from "../../src/tools/fetch-url-tool.ts";
import { tempDir } from "../support/daemon.ts";
import type { OtlpReceiver, ReceivedSpan } from "../support/otlp-receiver.ts";
import { type InProcessTelemetry, startInProcessTelemetry } from "../support/in-process-telemetry.ts";

const BEARER = "tok-bearer-7c1d";
const PASSWORD = "pw-userinfo-42aa";
const QUERY_SECRET = "sig-query-9b3e";
const BAGGAGE = "tenant=internal-7f2a";

let receiver: OtlpReceiver;
let telemetry: InProcessTelemetry;

/** Records each request's headers; `/away` redirects to `other` (another origin). */
function recorder(other?: string) {
  const seen: Array<{ path: string; headers: Headers }> = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(request) {
      const path = new URL(request.url).pathname;
      seen.push({ path, headers: request.headers });
      if (path === "/away" && other) return new Response(null, { status: 302, headers: { location: other } });
      return new Response("ok");
    },
  });
  return { base: `http://127.0.0.1:${server.port}`, seen, stop: () => server.stop(true) };
}

let near: ReturnType<typeof recorder>;
let far: ReturnType<typeof recorder>;

beforeAll(async () => {
  far = recorder();
  near = recorder(`${far.base}/landed`);
  telemetry = await startInProcessTelemetry("agent");
  receiver = telemetry.receiver;
});

afterAll(async () => {
  await telemetry.stop();
  near.stop();
  far.stop();
});

function loopbackGuard(): OutboundGuard {
  const allow = parseOutboundAllowList(["127.0.0.1"]);
  if (!allow.ok) throw new Error("allow list");
  return new OutboundGuard({ allow: allow.value });
}

/** Run `work` under a caller span carrying internal baggage; the spans it caused, once exported. */
async function callerSpans(work: () => Promise<unknown>, count = 1): Promise<ReceivedSpan[]> {
  const tracer = activeTracer();
  if (!tracer) throw new Error("telemetry is not on");
  const caller: Span = tracer.startSpan("caller");
  const active = propagation.setBaggage(
    trace.setSpan(context.active(), caller),
    propagation.createBaggage({ tenant: { value: "internal-7f2a" } }),
  );
  await context.with(active, work);
  caller.end();
  const { traceId, spanId } = caller.spanContext();
  const mine = (all: ReceivedSpan[]) => all.filter((span) => span.traceId === traceId && span.parentSpanId === spanId);
  return mine(await receiver.waitForSpans((all) => mine(all).length >= count));
}

const toolContext = (outbound: OutboundGuard) => ({
  root: tempDir(),
  signal: AbortSignal.timeout(5000),
  capBytes: 1024,
  timeoutMs: 5000,
  env: {},
  outbound,
});

describe("secrets a request carries never reach its client span", () => {
  test("a bearer in Authorization is sent but never exported", async () => {
    const spans = await callerSpans(() =>
      tracedFetch(`${near.base}/ok`, { headers: { authorization: `Bearer ${BEARER}` } }),
    );
    expect(near.seen.at(-1)?.headers.get("authorization")).toBe(`Bearer ${BEARER}`);
    expect(JSON.stringify(spans)).not.toContain(BEARER);
  });

  test("userinfo credentials in the URL are REDACTED in url.full (nor their Basic encoding)", async () => {
    const url = `http://agent:${PASSWORD}@127.0.0.1:${new URL(near.base).port}/ok`;
    const spans = await callerSpans(() => loopbackGuard().fetch(url, { signal: AbortSignal.timeout(5000) }));
    expect(spans[0]?.attributes["url.full"]).toBe(`http://REDACTED:REDACTED@127.0.0.1:${new URL(near.base).port}/ok`);
    const text = JSON.stringify(spans);
    expect(text).not.toContain(PASSWORD);
    expect(text).not.toContain(Buffer.from(`agent:${PASSWORD}`).toString("base64"));
  });

  test("a secret in the query string is REDACTED in url.full", async () => {
    const spans = await callerSpans(() =>
      fetchUrlTool.run({ url: `${near.base}/ok?access_token=${QUERY_SECRET}&x=1` }, toolContext(loopbackGuard())),
    );
    expect(spans[0]?.attributes["url.full"]).toBe(`${near.base}/ok?access_token=REDACTED&x=REDACTED`);
    expect(JSON.stringify(spans)).not.toContain(QUERY_SECRET);
  });
});

describe("the caller's baggage stays inside", () => {
  test("fetch_url (a URL the model chose) gets a traceparent but never the baggage", async () => {
    await callerSpans(() => fetchUrlTool.run({ url: `${near.base}/model-chosen` }, toolContext(loopbackGuard())));
    const request = near.seen.find((entry) => entry.path === "/model-chosen");
    expect(request?.headers.get("traceparent")).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(request?.headers.get("baggage")).toBeNull();
  });

  test("a redirect to another origin does not carry the baggage an A2A call sends its own origin", async () => {
    await callerSpans(
      () => loopbackGuard().fetch(`${near.base}/away`, { signal: AbortSignal.timeout(5000), baggage: true }),
      2,
    );
    expect(near.seen.find((entry) => entry.path === "/away")?.headers.get("baggage")).toBe(BAGGAGE);
    const landed = far.seen.find((entry) => entry.path === "/landed");
    expect(landed?.headers.get("traceparent")).not.toBeNull();
    expect(landed?.headers.get("baggage")).toBeNull();
  });
});

describe("tracing does not open the guard", () => {
  test("a cloud metadata literal is still refused, with nothing sent and no client span", async () => {
    const tracer = activeTracer();
    if (!tracer) throw new Error("telemetry is not on");
    const caller = tracer.startSpan("metadata-probe");
    const answer = await context.with(trace.setSpan(context.active(), caller), () =>
      new OutboundGuard().fetch("http://169.254.169.254/latest/meta-data/", { signal: AbortSignal.timeout(5000) }),
    );
    caller.end();
    expect(answer.ok).toBe(false);
    await receiver.waitForSpans((all) => all.some((span) => span.spanId === caller.spanContext().spanId));
    expect(receiver.spans.filter((span) => span.parentSpanId === caller.spanContext().spanId)).toEqual([]);
  });
});
