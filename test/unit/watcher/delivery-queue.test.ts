/**
 * The delivery queue against a scripted sink: a failed inject is re-sent with backoff and
 * delivered once, a follow-up waits behind it, Retry-After is honoured, a failed open creates its
 * session once and reports it, a permanent refusal is dropped without a retry, an hour-old payload
 * is given up, the queue is bounded, and the journal carries what is owed across a restart (an
 * acknowledged payload is never sent again). Also the policy's arithmetic.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "../../../src/telemetry/logger.ts";
import {
  type DeliveryPolicy,
  isPermanentStatus,
  parseRetryAfter,
  retryDelayMs,
} from "../../../src/watcher/core/delivery-policy.ts";
import type {
  AppendResult,
  IncidentSink,
  OpenBinding,
  OpenResult,
  SinkFailure,
} from "../../../src/watcher/core/sink.ts";
import { DeliveryQueue } from "../../../src/watcher/delivery-queue.ts";
import { PendingInjects } from "../../../src/watcher/pending-injects.ts";
import { WatcherMetrics } from "../../../src/watcher/watcher-metrics.ts";
import { tempDir, waitFor } from "../../support/daemon.ts";

const FAST: DeliveryPolicy = {
  backoffMinMs: 20,
  backoffMaxMs: 80,
  retryAfterMaxMs: 2000,
  giveUpAfterMs: 60_000,
  maxPending: 100,
};

/** A sink whose answers are scripted per call; it records every attempt with its time. */
class ScriptedSink implements IncidentSink {
  readonly name = "scripted";
  readonly attempts: Array<{ op: "open" | "append"; id: string; kind: string; at: number; delivered: boolean }> = [];
  /** Failures to answer, in order, before answering success. */
  failures: Array<SinkFailure & { created?: boolean }> = [];
  private next = 0;

  async open(payload: object): Promise<OpenResult> {
    const failure = this.failures.shift();
    const kind = String((payload as { kind?: unknown }).kind);
    if (failure && !failure.created) {
      this.attempts.push({ op: "open", id: "", kind, at: Date.now(), delivered: false });
      return failure;
    }
    const id = `sess-${++this.next}`;
    this.attempts.push({ op: "open", id, kind, at: Date.now(), delivered: !failure });
    return failure
      ? {
          id,
          error: failure.error,
          ...(failure.retryAfterMs !== undefined ? { retryAfterMs: failure.retryAfterMs } : {}),
        }
      : { id };
  }

  async append(id: string, payload: object): Promise<AppendResult> {
    const failure = this.failures.shift();
    this.attempts.push({
      op: "append",
      id,
      kind: String((payload as { kind?: unknown }).kind),
      at: Date.now(),
      delivered: !failure,
    });
    return failure ? { ok: false, ...failure } : { ok: true };
  }

  delivered(): string[] {
    return this.attempts
      .filter((attempt) => attempt.delivered)
      .map((attempt) => `${attempt.op}:${attempt.id}:${attempt.kind}`);
  }
}

const binding = (key: string): OpenBinding => ({
  key,
  kind: "cluster-event",
  reason: "OOMKilled",
  severity: "critical",
  incident: { namespace: "shop", kind_of_object: "Pod", name: "web-1", fingerprint: "sha256:x", cluster: "prod" },
});

function queueOf(sink: IncidentSink, options: { path?: string; policy?: DeliveryPolicy } = {}) {
  const log: string[] = [];
  const metrics = new WatcherMetrics("prod");
  const logger = createLogger("debug", (line) => log.push(line));
  const queue = new DeliveryQueue(sink, {
    journal: new PendingInjects(options.path, logger),
    logger,
    metrics,
    policy: options.policy ?? FAST,
  });
  const events: string[] = [];
  queue.listener = {
    opened: (bound, sid) => events.push(`opened:${bound.key}:${sid}`),
    delivered: (bound, sid) => events.push(`delivered:${bound.key}:${sid}`),
  };
  queue.start();
  return { queue, log, metrics, events };
}

const unavailable = (retryAfterMs?: number): SinkFailure => ({
  error: "inject: HTTP 503: shutting down",
  ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
});

describe("delivery policy", () => {
  test("backoff doubles to its cap; Retry-After replaces it within bounds; which statuses are permanent", () => {
    const policy: DeliveryPolicy = {
      backoffMinMs: 1000,
      backoffMaxMs: 60_000,
      retryAfterMaxMs: 300_000,
      giveUpAfterMs: 3_600_000,
      maxPending: 1000,
    };
    expect([1, 2, 3, 4, 7, 8, 100].map((attempts) => retryDelayMs(attempts, undefined, policy))).toEqual([
      1000, 2000, 4000, 8000, 60_000, 60_000, 60_000,
    ]);
    expect(retryDelayMs(5, 3000, policy)).toBe(3000);
    expect(retryDelayMs(1, 0, policy)).toBe(1000);
    expect(retryDelayMs(1, 3_600_000, policy)).toBe(300_000);
    const now = Date.parse("2026-07-24T10:00:00Z");
    expect(parseRetryAfter("2", now)).toBe(2000);
    expect(parseRetryAfter("Fri, 24 Jul 2026 10:00:05 GMT", now)).toBe(5000);
    expect([parseRetryAfter("soon", now), parseRetryAfter(null, now), parseRetryAfter("", now)]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    expect([400, 401, 403, 404, 413, 415].every(isPermanentStatus)).toBe(true);
    expect([408, 425, 429, 500, 502, 503, 504].some(isPermanentStatus)).toBe(false);
  });
});

describe("delivery queue", () => {
  test("a failed inject is re-sent with backoff and delivered once; a follow-up for the same session waits behind it", async () => {
    const sink = new ScriptedSink();
    const { queue, metrics, log } = queueOf(sink);
    sink.failures = [unavailable(), unavailable()];
    expect(await queue.append("sess-9", { kind: "cluster-event" })).toMatchObject({ ok: false, queued: true });
    expect(await queue.append("sess-9", { kind: "resolved" })).toEqual({ ok: true, queued: true });
    await waitFor(() => (sink.delivered().length === 2 ? true : undefined), 5000, "both delivered");
    // Owed nothing more (the journal is empty): nothing can be re-sent.
    await waitFor(
      () => (metrics.render().includes('watcher_deliveries_pending{cluster="prod"} 0') ? true : undefined),
      5000,
      "nothing owed",
    );
    expect(sink.delivered()).toEqual(["append:sess-9:cluster-event", "append:sess-9:resolved"]);
    expect(sink.attempts.map((attempt) => attempt.kind)).toEqual([
      "cluster-event",
      "cluster-event",
      "cluster-event",
      "resolved",
    ]);
    const [first, second, third] = sink.attempts.map((attempt) => attempt.at);
    expect((second ?? 0) - (first ?? 0)).toBeGreaterThanOrEqual(15);
    expect((third ?? 0) - (second ?? 0)).toBeGreaterThanOrEqual(35);
    expect(metrics.render()).toContain('watcher_deliveries_retried_total{cluster="prod",op="inject"} 2');
    expect(metrics.render()).toContain('watcher_deliveries_retry_succeeded_total{cluster="prod",op="inject"} 1');
    expect(metrics.render()).toContain('watcher_deliveries_pending{cluster="prod"} 0');
    expect(log.some((line) => line.includes("delivered after 3 attempts"))).toBe(true);
    await queue.stop();
  });

  test("Retry-After is honoured: no attempt before the receiver's time", async () => {
    const sink = new ScriptedSink();
    const { queue } = queueOf(sink);
    sink.failures = [unavailable(400)];
    await queue.append("sess-1", { kind: "cluster-event" });
    // Held meanwhile: a payload for another session is not even attempted before then.
    expect(await queue.append("sess-2", { kind: "cluster-event" })).toEqual({ ok: true, queued: true });
    await waitFor(() => (sink.delivered().length === 2 ? true : undefined), 5000, "delivered");
    const [failed, retried, other] = sink.attempts;
    expect((retried?.at ?? 0) - (failed?.at ?? 0)).toBeGreaterThanOrEqual(390);
    expect((other?.at ?? 0) - (failed?.at ?? 0)).toBeGreaterThanOrEqual(390);
    expect(sink.attempts).toHaveLength(3);
    await queue.stop();
  });

  test("a failed open is retried: its session is created once, reported, and the inject re-sent into it", async () => {
    const sink = new ScriptedSink();
    const { queue, events } = queueOf(sink);
    sink.failures = [
      { error: "session create: connect ECONNREFUSED" },
      { error: "inject: HTTP 502", created: true },
      unavailable(),
    ];
    const opened = await queue.open({ kind: "cluster-event" }, binding("uid-1|OOMKilled"));
    expect([opened.id, opened.queued]).toEqual([undefined, true]);
    expect(queue.hasPendingOpen("uid-1|OOMKilled")).toBe(true);
    await waitFor(() => (events.some((event) => event.startsWith("delivered")) ? true : undefined), 5000, "delivered");
    expect(events).toEqual(["opened:uid-1|OOMKilled:sess-1", "delivered:uid-1|OOMKilled:sess-1"]);
    expect(sink.attempts.map((attempt) => `${attempt.op}:${attempt.id}`)).toEqual([
      "open:",
      "open:sess-1",
      "append:sess-1",
      "append:sess-1",
    ]);
    expect(queue.hasPendingOpen("uid-1|OOMKilled")).toBe(false);
    await queue.stop();
  });

  test("an open without a binding (a storm's) is not queued; a created session whose inject failed is", async () => {
    const sink = new ScriptedSink();
    const { queue, metrics } = queueOf(sink);
    sink.failures = [{ error: "session create: HTTP 503" }];
    expect(await queue.open({ kind: "storm" })).toEqual({ error: "session create: HTTP 503" });
    // Decided before open answered: nothing was queued, so nothing is re-sent.
    expect(metrics.render()).toContain('watcher_deliveries_pending{cluster="prod"} 0');
    // Time under test: the failed attempt holds the sink for one backoff step; the next open waits it out.
    await Bun.sleep(50);
    sink.failures = [{ error: "inject: HTTP 503", created: true }];
    expect(await queue.open({ kind: "storm" })).toMatchObject({ id: "sess-1", queued: true });
    await waitFor(
      () => (sink.delivered().includes("append:sess-1:storm") ? true : undefined),
      5000,
      "storm inject re-sent",
    );
    await queue.stop();
  });

  test("a permanent refusal is dropped at once and counted; nothing is re-sent", async () => {
    const sink = new ScriptedSink();
    const { queue, metrics, log } = queueOf(sink);
    sink.failures = [{ error: "inject: HTTP 404: no such session", permanent: true }];
    expect(await queue.append("sess-gone", { kind: "resolved" })).toMatchObject({ ok: false, permanent: true });
    // Dropped before append answered: nothing is owed, so nothing is re-sent.
    expect(metrics.render()).toContain('watcher_deliveries_pending{cluster="prod"} 0');
    expect(sink.attempts).toHaveLength(1);
    expect(metrics.render()).toContain('watcher_deliveries_dropped_total{cause="rejected",cluster="prod"} 1');
    expect(log.some((line) => line.includes("delivery: dropped (rejected)"))).toBe(true);
    await queue.stop();
  });

  test("bounds: a payload undelivered past the give-up age is dropped (expired); the oldest goes when the queue is full (overflow)", async () => {
    const sink = new ScriptedSink();
    const { queue, metrics } = queueOf(sink, { policy: { ...FAST, giveUpAfterMs: 150, maxPending: 2 } });
    sink.failures = Array.from({ length: 100 }, () => unavailable());
    await queue.append("sess-1", { kind: "a" });
    await queue.append("sess-2", { kind: "b" });
    await queue.append("sess-3", { kind: "c" });
    expect(metrics.render()).toContain('watcher_deliveries_dropped_total{cause="overflow",cluster="prod"} 1');
    await waitFor(
      () => (metrics.render().includes('watcher_deliveries_pending{cluster="prod"} 0') ? true : undefined),
      5000,
      "all expired",
    );
    expect(metrics.render()).toContain('watcher_deliveries_dropped_total{cause="expired",cluster="prod"} 2');
    await queue.stop();
  });

  test("the journal carries what is owed across a restart; what was acknowledged is never sent again", async () => {
    const path = join(tempDir(), "state", "dedup.json.pending");
    const down = new ScriptedSink();
    const first = queueOf(down, { path });
    // Acknowledged before the daemon went away: never part of the journal's debt.
    expect(await first.queue.append("sess-4", { kind: "early" })).toEqual({ ok: true });
    down.failures = Array.from({ length: 100 }, () => unavailable(60_000));
    await first.queue.open({ kind: "cluster-event" }, binding("uid-7|OOMKilled"));
    await first.queue.append("sess-4", { kind: "resolved" });
    await first.queue.stop();
    expect(readFileSync(path, "utf8").trim().split("\n")).toHaveLength(2);
    const restarted = new ScriptedSink();
    const second = queueOf(restarted, { path });
    await waitFor(() => (restarted.delivered().length === 2 ? true : undefined), 5000, "restored payloads delivered");
    await waitFor(
      () => (second.metrics.render().includes('watcher_deliveries_pending{cluster="prod"} 0') ? true : undefined),
      5000,
      "nothing owed",
    );
    expect(restarted.delivered()).toEqual(["open:sess-1:cluster-event", "append:sess-4:resolved"]);
    expect(second.events).toEqual(["opened:uid-7|OOMKilled:sess-1", "delivered:uid-7|OOMKilled:sess-1"]);
    await second.queue.stop();
    // A third start owes nothing: every payload was delivered once.
    const third = new ScriptedSink();
    const again = queueOf(third, { path });
    // The journal is read when the queue is built: it restored nothing, so nothing is sent.
    expect(again.metrics.render()).toContain('watcher_deliveries_pending{cluster="prod"} 0');
    expect(third.attempts).toEqual([]);
    await again.queue.stop();
  });
});
