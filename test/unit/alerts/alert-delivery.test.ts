/**
 * Delivering one alert (D462) to a local receiver over a real socket: what is retried (5xx, 429,
 * a connection refused) and what is not (4xx, a redirect, a refused address), the bound on the
 * attempts, `Retry-After` honoured up to the cap, the same idempotency key on every attempt, and
 * the turn's cancel stopping the waits.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type DeliveryPolicy, deliverAlert } from "../../../src/alerts/alert-delivery.ts";
import { parseOutboundAllowList } from "../../../src/net/outbound-allow-list.ts";
import { OutboundGuard } from "../../../src/net/outbound-guard.ts";

const FAST: DeliveryPolicy = { attempts: 3, backoffMs: 20, maxBackoffMs: 200, attemptTimeoutMs: 2000 };
const hits = new Map<string, string[]>();
let receiver: ReturnType<typeof Bun.serve>;
let base: string;

function guard(allow: string[] = ["127.0.0.1"]): OutboundGuard {
  const parsed = parseOutboundAllowList(allow);
  if (!parsed.ok) throw new Error(parsed.error);
  return new OutboundGuard({ allow: parsed.value });
}

const send = (path: string, policy = FAST, signal = new AbortController().signal) =>
  deliverAlert(
    guard(),
    { url: `${base}${path}`, body: { level: "info", summary: "s" }, idempotencyKey: "k-1", signal },
    policy,
  );

beforeAll(() => {
  receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const path = new URL(request.url).pathname;
      const seen = hits.get(path) ?? [];
      seen.push(request.headers.get("idempotency-key") ?? "");
      hits.set(path, seen);
      if (path === "/gone") return new Response("no such hook", { status: 404 });
      if (path === "/down") return new Response("upstream down", { status: 503 });
      if (path === "/moved") return new Response(null, { status: 302, headers: { location: "/ok" } });
      if (path === "/slow-down" && seen.length === 1)
        return new Response("later", { status: 429, headers: { "retry-after": "1" } });
      return new Response("ok");
    },
  });
  base = `http://127.0.0.1:${receiver.port}`;
});

afterAll(() => receiver.stop(true));

describe("deliverAlert", () => {
  test("a 4xx ends at the first attempt with the status and the head of the answer", async () => {
    const outcome = await send("/gone");
    expect(outcome).toMatchObject({ delivered: false, attempts: 1, statusCode: 404, error: "HTTP 404: no such hook" });
    expect(hits.get("/gone")).toEqual(["k-1"]);
  });

  test("a 5xx is retried until the attempts run out, each with the same idempotency key", async () => {
    const outcome = await send("/down");
    expect(outcome).toMatchObject({ delivered: false, attempts: 3, statusCode: 503, error: "HTTP 503: upstream down" });
    expect(hits.get("/down")).toEqual(["k-1", "k-1", "k-1"]);
  });

  test("a redirect is not followed: a failure at the first attempt", async () => {
    const outcome = await send("/moved");
    expect(outcome).toMatchObject({ delivered: false, attempts: 1, statusCode: 302 });
    expect(hits.get("/ok")).toBeUndefined();
  });

  test("429 with Retry-After: waited (up to the cap), then delivered", async () => {
    const started = performance.now();
    const outcome = await send("/slow-down", { ...FAST, maxBackoffMs: 1500 });
    expect(outcome).toMatchObject({ delivered: true, attempts: 2, statusCode: 200 });
    expect(performance.now() - started).toBeGreaterThanOrEqual(950);
  });

  test("a connection refused is retried; the URL is not in the error", async () => {
    const closed = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
    const url = `http://127.0.0.1:${closed.port}/hook-secret-path`;
    closed.stop(true);
    const outcome = await deliverAlert(
      guard(),
      { url, body: {}, idempotencyKey: "k", signal: new AbortController().signal },
      FAST,
    );
    expect(outcome).toMatchObject({ delivered: false, attempts: 3 });
    expect(JSON.stringify(outcome)).not.toContain("hook-secret-path");
  });

  test("an address the guard refuses is not retried", async () => {
    const outcome = await deliverAlert(
      guard([]),
      { url: `${base}/ok`, body: {}, idempotencyKey: "k", signal: new AbortController().signal },
      FAST,
    );
    expect(outcome).toMatchObject({ delivered: false, attempts: 1 });
    expect(outcome.delivered ? "" : outcome.error).toContain("not in the outbound allow list");
  });

  test("the turn's cancel stops the waits between attempts", async () => {
    const cancel = new AbortController();
    const slow: DeliveryPolicy = { ...FAST, attempts: 10, backoffMs: 5000, maxBackoffMs: 5000 };
    const started = performance.now();
    const pending = send("/down", slow, cancel.signal);
    // time under test: the cancel lands while the delivery waits out its 5 s backoff.
    setTimeout(() => cancel.abort(), 100);
    await expect(pending).rejects.toBeDefined();
    expect(performance.now() - started).toBeLessThan(3000);
  });
});
