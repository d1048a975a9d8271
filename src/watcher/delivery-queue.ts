/**
 * The delivery queue between the dispatcher and the sink (issue 13 item 11): a payload the sink
 * failed to take is kept (in the pending-inject journal, so a restart re-sends it) and re-sent
 * with backoff, honouring the receiver's Retry-After, until it is delivered, refused for good (a
 * 4xx other than 408/425/429), or an hour old; at most 1,000 wait in memory, and with `--store`
 * the rest spill to the occurrence store behind them (D451). Payloads of one session leave
 * in the order they were queued, and a follow-up for a session with payloads still owed waits
 * behind them. A failed open that carries a binding (a new incident) is retried too: the session
 * is created once (its id is journaled before the inject is re-sent) and reported back through
 * the listener so the dispatcher binds the incident. An acknowledged payload leaves the journal
 * before anything else and is never sent again. It implements the sink contract itself.
 *
 * A failure of the receiver as a whole (any retryable failure) holds every session until the
 * retry time, so a daemon that is down gets one attempt per backoff step, not one per payload.
 * A re-send runs in the trace context its payload was queued in (the incident's trace), or none
 * after a restart.
 */
import { type Context, ROOT_CONTEXT, context } from "@opentelemetry/api";
import type { Logger } from "../telemetry/logger.ts";
import { activeTracer } from "../telemetry/telemetry.ts";
import { DEFAULT_DELIVERY_POLICY, type DeliveryPolicy, retryDelayMs } from "./core/delivery-policy.ts";
import type { AppendResult, IncidentSink, OpenBinding, OpenResult, SinkFailure } from "./core/sink.ts";
import type { PendingInject, PendingInjects } from "./pending-injects.ts";
import type { WatcherMetrics } from "./watcher-metrics.ts";

/** What the dispatcher learns from payloads delivered late. */
export interface DeliveryListener {
  /** A queued open created its session: bind the incident to it. */
  opened(binding: OpenBinding, sessionId: string): void;
  /** The first payload of an incident arrived (late). */
  delivered(binding: OpenBinding, sessionId: string): void;
}

export interface DeliveryQueueDeps {
  journal: PendingInjects;
  logger: Logger;
  metrics: WatcherMetrics;
  policy?: DeliveryPolicy;
  /** Wall clock (retries are real time, whatever the pipeline's clock). */
  now?: () => number;
}

type Cause = "rejected" | "expired" | "overflow";

export class DeliveryQueue implements IncidentSink {
  readonly name: string;
  readonly targetSession: string | undefined;
  listener: DeliveryListener | undefined;
  private readonly policy: DeliveryPolicy;
  private readonly now: () => number;
  private readonly dueAt = new Map<string, number>();
  /** The trace context each queued payload came in (telemetry on only). */
  private readonly contexts = new Map<string, Context>();
  private holdUntil = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private passing: Promise<void> | undefined;
  private started = false;
  private stopped = false;

  constructor(
    private readonly inner: IncidentSink,
    private readonly deps: DeliveryQueueDeps,
  ) {
    this.name = inner.name;
    this.targetSession = inner.targetSession;
    this.policy = deps.policy ?? DEFAULT_DELIVERY_POLICY;
    this.now = deps.now ?? Date.now;
    deps.metrics.gauge("deliveries_pending", "payloads waiting to be re-sent to the sink", () => deps.journal.size);
    deps.metrics.gauge(
      "deliveries_spilled",
      "pending payloads waiting in the occurrence store behind the queue's window (D451)",
      () => deps.journal.spilled,
    );
  }

  /** Starts re-sending (payloads restored from the journal first). Call once the listener is set. */
  start(): void {
    this.started = true;
    this.schedule();
  }

  /** Whether a new incident's open for this dedup key is queued (its duplicates must not open another). */
  hasPendingOpen(key: string): boolean {
    return this.deps.journal.size > 0 && this.deps.journal.hasOpen(key);
  }

  async open(payload: object, binding?: OpenBinding): Promise<OpenResult> {
    if (this.targetSession !== undefined) {
      const appended = await this.append(this.targetSession, payload);
      return appended.ok
        ? { id: this.targetSession, ...(appended.queued ? { queued: true } : {}) }
        : { ...failureOf(appended), id: this.targetSession };
    }
    if (this.holding()) {
      // The receiver failed a moment ago: queue without an attempt (a storm's open is retried by its next member).
      const error = `not attempted: ${this.inner.name} unavailable until ${new Date(this.holdUntil).toISOString()}`;
      if (!binding) return { error };
      this.enqueue({ id: crypto.randomUUID(), payload, binding, queuedAt: this.now(), attempts: 0 });
      return { error, queued: true };
    }
    const result = await this.inner.open(payload, binding);
    if (result.id === undefined) {
      if (!result.permanent) this.hold(result, 1);
      if (result.permanent || !binding) return result;
      this.enqueue({ id: crypto.randomUUID(), payload, binding, queuedAt: this.now(), attempts: 1 }, result);
      return { ...result, queued: true };
    }
    if (result.error === undefined) {
      this.holdUntil = 0;
      return result;
    }
    if (result.permanent) {
      this.count("rejected", result.error);
      return result;
    }
    const failure = failureOf(result);
    this.hold(failure, 1);
    this.enqueue(
      {
        id: crypto.randomUUID(),
        sessionId: result.id,
        payload,
        ...(binding ? { binding } : {}),
        queuedAt: this.now(),
        attempts: 1,
      },
      failure,
    );
    return { ...result, queued: true };
  }

  async append(sessionId: string, payload: object): Promise<AppendResult> {
    const entry: PendingInject = { id: crypto.randomUUID(), sessionId, payload, queuedAt: this.now(), attempts: 0 };
    if (this.owes(sessionId) || this.holding()) {
      this.enqueue(entry);
      return { ok: true, queued: true };
    }
    const result = await this.inner.append(sessionId, payload);
    if (result.ok) {
      this.holdUntil = 0;
      return result;
    }
    if (result.permanent) {
      this.count("rejected", result.error);
      return result;
    }
    entry.attempts = 1;
    this.hold(result, 1);
    this.enqueue(entry, result);
    return { ...result, queued: true };
  }

  /** Stops re-sending after the attempt in flight; what is still owed stays in the journal. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.passing;
    this.deps.journal.close();
  }

  private holding(): boolean {
    return this.holdUntil > this.now();
  }

  private hold(failure: SinkFailure, attempts: number): number {
    const delay = retryDelayMs(attempts, failure.retryAfterMs, this.policy);
    this.holdUntil = Math.max(this.holdUntil, this.now() + delay);
    return delay;
  }

  private owes(sessionId: string): boolean {
    return this.deps.journal.size > 0 && this.deps.journal.owes(sessionId);
  }

  private enqueue(entry: PendingInject, failure?: SinkFailure): void {
    while (this.deps.journal.full(this.policy.maxPending)) {
      const oldest = this.deps.journal.entries()[0];
      if (!oldest) break;
      this.drop(oldest, "overflow", "the queue is full");
    }
    try {
      this.deps.journal.put(entry);
    } catch (error) {
      // The spill could not write (disk full, D451): given up like an overflow, never thrown at a lane.
      this.count("overflow", `${describe(entry)}: the spill cannot take it: ${errorText(error)}`);
      return;
    }
    if (activeTracer() !== undefined) this.contexts.set(entry.id, context.active());
    if (failure) {
      this.dueAt.set(entry.id, this.holdUntil);
      this.deps.logger.warn(
        `delivery: ${describe(entry)} failed: ${failure.error}; re-sending with backoff (next in ${Math.round((this.holdUntil - this.now()) / 100) / 10}s)`,
      );
    }
    this.schedule();
  }

  private schedule(): void {
    if (!this.started || this.stopped || this.passing || this.timer) return;
    const heads = this.heads();
    if (heads.length === 0) return;
    const earliest = Math.min(...heads.map((entry) => this.dueAt.get(entry.id) ?? 0));
    const delay = Math.max(0, Math.max(earliest, this.holdUntil) - this.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.passing = this.pass().finally(() => {
        this.passing = undefined;
        this.schedule();
      });
    }, delay);
  }

  /** The first payload owed to each session (and each open still to create its session), oldest first. */
  private heads(): PendingInject[] {
    const seen = new Set<string>();
    const heads: PendingInject[] = [];
    for (const entry of this.deps.journal.entries()) {
      const lane = entry.sessionId ?? `open:${entry.id}`;
      if (seen.has(lane)) continue;
      seen.add(lane);
      heads.push(entry);
    }
    return heads;
  }

  /** Sends what is due until one attempt fails (the receiver is then held) or nothing is due. */
  private async pass(): Promise<void> {
    while (!this.stopped && !this.holding()) {
      const now = this.now();
      const due = this.heads().filter((entry) => (this.dueAt.get(entry.id) ?? 0) <= now);
      const entry = due.sort((left, right) => (this.dueAt.get(left.id) ?? 0) - (this.dueAt.get(right.id) ?? 0))[0];
      if (!entry) return;
      if (now - entry.queuedAt > this.policy.giveUpAfterMs) {
        this.drop(entry, "expired", `undelivered after ${Math.round(this.policy.giveUpAfterMs / 60_000)} minutes`);
        continue;
      }
      if (!(await this.attempt(entry))) return;
    }
  }

  /** One attempt, in the context its payload was queued in; false when it failed in a way worth retrying. */
  private attempt(entry: PendingInject): Promise<boolean> {
    const queuedIn = this.contexts.get(entry.id) ?? ROOT_CONTEXT;
    return context.with(queuedIn, () => this.attemptNow(entry));
  }

  private async attemptNow(entry: PendingInject): Promise<boolean> {
    const op = entry.sessionId === undefined ? "open" : "inject";
    if (entry.attempts > 0) this.deps.metrics.deliveriesRetried({ op });
    entry.attempts++;
    let failure: SinkFailure | undefined;
    if (entry.sessionId === undefined) {
      const result = await this.inner.open(entry.payload, entry.binding);
      if (result.id !== undefined) {
        entry.sessionId = result.id;
        // Journaled before the inject is re-sent, so a restart never creates a second session.
        if (this.deps.journal.has(entry.id)) this.deps.journal.put(entry);
        if (entry.binding) this.listener?.opened(entry.binding, result.id);
      }
      if (result.id === undefined || result.error !== undefined) failure = failureOf(result);
    } else {
      const result = await this.inner.append(entry.sessionId, entry.payload);
      if (!result.ok) failure = result;
    }
    if (!failure) {
      this.deps.journal.remove(entry.id);
      this.dueAt.delete(entry.id);
      this.contexts.delete(entry.id);
      this.holdUntil = 0;
      if (entry.attempts > 1) this.deps.metrics.deliveriesRetrySucceeded({ op });
      this.deps.logger.info(
        `delivery: ${describe(entry)} delivered${entry.attempts > 1 ? ` after ${entry.attempts} attempts` : ""}`,
      );
      if (entry.binding && entry.sessionId) this.listener?.delivered(entry.binding, entry.sessionId);
      return true;
    }
    if (failure.permanent) {
      this.drop(entry, "rejected", failure.error);
      return true;
    }
    const delay = this.hold(failure, entry.attempts);
    this.dueAt.set(entry.id, this.now() + delay);
    this.deps.logger.warn(
      `delivery: ${describe(entry)} failed again (attempt ${entry.attempts}): ${failure.error}; next in ${Math.round(delay / 100) / 10}s`,
    );
    return false;
  }

  private drop(entry: PendingInject, cause: Cause, why: string): void {
    this.deps.journal.remove(entry.id);
    this.dueAt.delete(entry.id);
    this.contexts.delete(entry.id);
    this.count(cause, `${describe(entry)} after ${entry.attempts} attempt(s): ${why}`);
  }

  private count(cause: Cause, why: string): void {
    this.deps.metrics.deliveriesDropped({ cause });
    this.deps.logger.error(`delivery: dropped (${cause}): ${why}`);
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function failureOf(result: Partial<SinkFailure>): SinkFailure {
  return {
    error: result.error ?? "unknown failure",
    ...(result.permanent ? { permanent: true } : {}),
    ...(result.retryAfterMs !== undefined ? { retryAfterMs: result.retryAfterMs } : {}),
  };
}

function describe(entry: PendingInject): string {
  const payload = entry.payload as { kind?: unknown; namespace?: unknown; name?: unknown };
  const subject = `${String(payload.kind ?? "payload")} ${String(payload.namespace ?? "")}/${String(payload.name ?? "")}`;
  return entry.sessionId === undefined ? `open of ${subject}` : `inject of ${subject} into ${entry.sessionId}`;
}
