/**
 * The watcher's pipeline spans (src/watcher/watcher-spans.ts) in process, the SDK exporting to a
 * local OTLP receiver: a cluster event is the root `watcher event` (its outcome an attribute), the
 * incident it opens `watcher incident`, each sink attempt `watcher sink open`; a re-send the
 * delivery queue makes later joins the incident's trace; a filtered event is a lone span; a
 * recovery outcome is a `watcher outcome` span linked back to its incident.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { DEFAULT_REASONS } from "../../../src/watcher/core/reasons.ts";
import type { Signal } from "../../../src/watcher/core/signal.ts";
import type { AppendResult, IncidentSink, OpenResult } from "../../../src/watcher/core/sink.ts";
import { DeliveryQueue } from "../../../src/watcher/delivery-queue.ts";
import { Dispatcher } from "../../../src/watcher/dispatcher.ts";
import { PendingInjects } from "../../../src/watcher/pending-injects.ts";
import { WatcherMetrics } from "../../../src/watcher/watcher-metrics.ts";
import { TracedSink } from "../../../src/watcher/watcher-spans.ts";
import type { OtlpReceiver, ReceivedSpan } from "../../support/otlp-receiver.ts";
import { type InProcessTelemetry, startInProcessTelemetry } from "../../support/in-process-telemetry.ts";

let receiver: OtlpReceiver;
let telemetry: InProcessTelemetry;

beforeAll(async () => {
  telemetry = await startInProcessTelemetry("watcher");
  receiver = telemetry.receiver;
});

afterAll(async () => {
  await telemetry.stop();
});

/** Fails the first `failOpens` opens with a retryable 503, then opens `sess-N`. */
class FlakySink implements IncidentSink {
  readonly name = "flaky";
  failOpens = 0;
  private next = 0;

  async open(): Promise<OpenResult> {
    if (this.failOpens-- > 0) return { error: "HTTP 503" };
    return { id: `sess-${++this.next}` };
  }

  async append(): Promise<AppendResult> {
    return { ok: true };
  }
}

let clock = Date.parse("2026-07-24T10:00:00Z");

function crash(name: string, overrides: Partial<Signal> = {}): Signal {
  return {
    kind: "cluster-event",
    reason: "BackOff",
    namespace: "shop",
    kindOfObject: "Pod",
    name,
    uid: `uid-${name}`,
    message: "Back-off restarting failed container",
    eventCount: 3,
    firstSeen: clock,
    lastSeen: clock,
    type: "Warning",
    severity: "critical",
    ...overrides,
  };
}

function pipeline(sink: IncidentSink, cleared: () => boolean = () => false) {
  const logger = createLogger("error", () => {});
  const metrics = new WatcherMetrics("prod");
  const queue = new DeliveryQueue(new TracedSink(sink), {
    journal: new PendingInjects(undefined, logger),
    logger,
    metrics,
    policy: { backoffMinMs: 20, backoffMaxMs: 40, retryAfterMaxMs: 1000, giveUpAfterMs: 60_000, maxPending: 10 },
  });
  const dispatcher = new Dispatcher(
    {
      cluster: "prod",
      zone: "",
      mode: "per-incident",
      filter: {
        reasons: new Set(DEFAULT_REASONS),
        allowNamespaces: new Set(),
        excludeNamespaces: new Set(),
        backoffMinCount: 1,
        imagePullTransientMinCount: 3,
        unhealthyMinCount: 3,
      },
      dedupWindowMs: 300_000,
      recoveryStableForMs: 1000,
      enrichSeverities: new Set(),
      injectMaxBytes: 8192,
      severityOverrides: new Map(),
    },
    {
      sink: queue,
      logger,
      metrics,
      now: () => clock,
      clearance: () => (cleared() ? { cleared: true, stableSince: clock - 5000 } : { cleared: false }),
    },
  );
  queue.listener = {
    opened: (binding, sessionId) => void dispatcher.bindQueuedOpen(binding, sessionId),
    delivered: (binding) => dispatcher.noteQueuedDelivery(binding),
  };
  queue.start();
  return { dispatcher, queue };
}

function eventSpanOf(name: string, spans: ReceivedSpan[]): ReceivedSpan | undefined {
  return spans.find((span) => span.name === "watcher event" && span.attributes["spar.watcher.object.name"] === name);
}

const childrenOf = (parent: ReceivedSpan | undefined, spans: ReceivedSpan[]) =>
  spans.filter((span) => span.parentSpanId === parent?.spanId && span.traceId === parent?.traceId);

test("event -> incident -> sink open; a failed open re-sent by the queue joins the incident's trace", async () => {
  const sink = new FlakySink();
  sink.failOpens = 1;
  const { dispatcher, queue } = pipeline(sink);
  try {
    expect(await dispatcher.dispatch(crash("web-1"))).toBe("open-failed");
    const spans = await receiver.waitForSpans((all) => {
      const incident = childrenOf(eventSpanOf("web-1", all), all)[0];
      return childrenOf(incident, all).length >= 2;
    });
    const event = eventSpanOf("web-1", spans);
    expect(event?.parentSpanId).toBe("");
    expect(event?.attributes).toMatchObject({
      "k8s.cluster.name": "prod",
      "k8s.namespace.name": "shop",
      "spar.watcher.object.kind": "Pod",
      "spar.watcher.reason": "BackOff",
      "spar.watcher.severity": "critical",
      "spar.watcher.outcome": "open-failed",
    });
    const [incident] = childrenOf(event, spans);
    expect(incident?.name).toBe("watcher incident");
    expect(incident?.attributes["spar.watcher.fingerprint"]).toBeString();
    const attempts = childrenOf(incident, spans);
    expect(attempts.map((span) => span.name)).toEqual(["watcher sink open", "watcher sink open"]);
    expect(attempts[0]).toMatchObject({ statusCode: 2, attributes: { "error.type": "retryable" } });
    expect(attempts[1]?.attributes).toMatchObject({ "spar.watcher.sink": "flaky", "spar.session.id": "sess-1" });
    expect(attempts[1]?.statusCode).not.toBe(2);
  } finally {
    await queue.stop();
  }
});

test("two incidents queued behind one timer: each re-send is in its own incident's trace", async () => {
  const sink = new FlakySink();
  sink.failOpens = 2;
  const { dispatcher, queue } = pipeline(sink);
  try {
    await dispatcher.dispatch(crash("web-a"));
    // The receiver is held: this open is queued without an attempt, behind the timer web-a's armed.
    await dispatcher.dispatch(crash("web-b"));
    const incidentOf = (name: string, all: ReceivedSpan[]) => childrenOf(eventSpanOf(name, all), all)[0];
    const opened = (name: string, all: ReceivedSpan[]) =>
      childrenOf(incidentOf(name, all), all).some((span) => span.attributes["spar.session.id"] !== undefined);
    const spans = await receiver.waitForSpans((all) => opened("web-a", all) && opened("web-b", all));
    for (const name of ["web-a", "web-b"]) {
      const incident = incidentOf(name, spans);
      const attempts = spans.filter((span) => span.name === "watcher sink open" && span.traceId === incident?.traceId);
      expect(attempts.length).toBeGreaterThanOrEqual(1);
      expect(attempts.every((span) => span.parentSpanId === incident?.spanId)).toBe(true);
    }
  } finally {
    await queue.stop();
  }
});

test("a filtered event is one span with its outcome and no children", async () => {
  const { dispatcher, queue } = pipeline(new FlakySink());
  try {
    expect(await dispatcher.dispatch(crash("web-2", { reason: "Pulled", type: "Normal" }))).toBe("filtered");
    const spans = await receiver.waitForSpans((all) => eventSpanOf("web-2", all) !== undefined);
    const event = eventSpanOf("web-2", spans);
    expect(event?.attributes["spar.watcher.outcome"]).toBe("filtered");
    // Time under test: 100 ms more, in which a child span would have been exported too.
    await Bun.sleep(100);
    expect(childrenOf(event, receiver.spans)).toEqual([]);
  } finally {
    await queue.stop();
  }
});

test("a recovery outcome is a `watcher outcome` span linked to its incident's span", async () => {
  let ready = false;
  const { dispatcher, queue } = pipeline(new FlakySink(), () => ready);
  try {
    expect(await dispatcher.dispatch(crash("web-3"))).toBe("opened");
    ready = true;
    clock += 10_000;
    await dispatcher.sweepRecovery();
    const spans = await receiver.waitForSpans((all) => all.some((span) => span.name === "watcher outcome"));
    const incident = childrenOf(eventSpanOf("web-3", spans), spans)[0];
    const outcome = spans.find((span) => span.name === "watcher outcome");
    expect(outcome?.attributes["spar.watcher.outcome.kind"]).toBe("resolved");
    expect(outcome?.links).toEqual([
      { traceId: incident?.traceId ?? "", spanId: incident?.spanId ?? "", attributes: {} },
    ]);
    expect(childrenOf(outcome, spans).map((span) => span.name)).toEqual(["watcher sink append"]);
  } finally {
    await queue.stop();
  }
});
