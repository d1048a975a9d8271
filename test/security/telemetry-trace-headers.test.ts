/**
 * The trace-context headers every listener now reads (traceparent, tracestate, baggage) and what a
 * server span records, attacked in process over guardedApp with the SDK exporting to a local OTLP
 * receiver: a malformed traceparent is never adopted, oversized baggage is not carried, and
 * secrets a request carries (its bearer token, its query string) never reach an exported span.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { propagation } from "@opentelemetry/api";
import { LOCAL_CALLER } from "../../src/surfaces/http/caller-auth.ts";
import { guardedApp } from "../../src/surfaces/http/guarded-app.ts";
import { createLogger } from "../../src/telemetry/logger.ts";
import { type TelemetryHandle, extractContext, startTelemetry } from "../../src/telemetry/telemetry.ts";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../support/otlp-receiver.ts";

const TOKEN = "tok-9f8e7d6c5b4a";
let receiver: OtlpReceiver;
let telemetry: TelemetryHandle;

beforeAll(async () => {
  receiver = startOtlpReceiver();
  telemetry = await startTelemetry("agent", {
    settings: { endpoint: receiver.url },
    version: "test",
    logger: createLogger("error"),
    env: { OTEL_BSP_SCHEDULE_DELAY: "20", OTEL_METRICS_EXPORTER: "none" },
  });
  app = buildApp();
});

afterAll(async () => {
  await telemetry.shutdown();
  await receiver.stop();
});

/** Built once telemetry runs: a listener decides on its spans when it is built. */
function buildApp() {
  return guardedApp({
    transport: { token: TOKEN, readonly: false },
    resolveCaller: () => LOCAL_CALLER,
    publicPaths: new Set(),
  }).get("/items/:id", ({ params }) => ({ id: params.id }));
}
let app: ReturnType<typeof buildApp>;

/** Send `headers` to /items/<marker> and return the span the request produced. */
async function spanFor(marker: string, headers: Record<string, string>, query = ""): Promise<ReceivedSpan> {
  await app.handle(
    new Request(`http://127.0.0.1:7777/items/${marker}${query}`, {
      headers: { authorization: `Bearer ${TOKEN}`, ...headers },
    }),
  );
  const spans = await receiver.waitForSpans((all) =>
    all.some((span) => span.attributes["url.path"] === `/items/${marker}`),
  );
  const span = spans.find((candidate) => candidate.attributes["url.path"] === `/items/${marker}`);
  if (!span) throw new Error(`no span for ${marker}`);
  return span;
}

describe("a malformed traceparent is not adopted: the request starts a trace of its own", () => {
  const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
  const PARENT = "00f067aa0ba902b7";
  const cases: Array<[string, string]> = [
    ["the reserved version ff", `ff-${TRACE}-${PARENT}-01`],
    ["an all-zero trace id", `00-${"0".repeat(32)}-${PARENT}-01`],
    ["an all-zero parent id", `00-${TRACE}-${"0".repeat(16)}-01`],
    ["a non-hex trace id", `00-${"g".repeat(32)}-${PARENT}-01`],
    ["a truncated header", `00-${TRACE.slice(0, 20)}-${PARENT}-01`],
    ["a header with extra fields in version 00", `00-${TRACE}-${PARENT}-01-extra`],
  ];
  cases.forEach(([what, header], index) => {
    test(`${what} is refused as a parent`, async () => {
      const span = await spanFor(`malformed-${index}`, { traceparent: header });
      expect(span.parentSpanId).toBe("");
      expect(span.traceId).not.toBe(TRACE);
      expect(span.traceId).toMatch(/^[0-9a-f]{32}$/);
    });
  });
});

describe("what a span records", () => {
  test("the bearer token in Authorization never reaches an exported span", async () => {
    const span = await spanFor("token-probe", {});
    expect(JSON.stringify(span)).not.toContain(TOKEN);
  });

  test("a query string (where a secret may ride) never reaches an exported span", async () => {
    const span = await spanFor("query-probe", {}, "?api_key=sk-live-secret&since=5");
    expect(JSON.stringify(span)).not.toContain("sk-live-secret");
    expect(span.attributes["url.path"]).toBe("/items/query-probe");
  });

  test("a tracestate or baggage header never becomes a span attribute", async () => {
    const span = await spanFor("baggage-probe", {
      traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      tracestate: "vendor=injected-state",
      baggage: "user.id=injected-baggage",
    });
    expect(JSON.stringify(span.attributes)).not.toContain("injected-");
  });
});

describe("oversized baggage is not carried", () => {
  test("more than 180 entries: the excess is dropped", () => {
    const entries = Array.from({ length: 400 }, (_, index) => `k${index}=v`).join(",");
    const baggage = propagation.getBaggage(extractContext(new Headers({ baggage: entries })));
    expect(baggage?.getAllEntries().length ?? 0).toBeLessThanOrEqual(180);
  });

  test("an entry above the 4096-byte pair limit is dropped", () => {
    const baggage = propagation.getBaggage(extractContext(new Headers({ baggage: `huge=${"x".repeat(5000)},ok=1` })));
    expect(baggage?.getEntry("huge")).toBeUndefined();
    expect(baggage?.getEntry("ok")?.value).toBe("1");
  });
});
