/**
 * The watchboard (docs/watcher-pipeline.md#watchboard, D418-D420): where warnings go in
 * per-incident mode instead of opening a session each. Warnings are buffered (src/watcher/core/watchboard.ts)
 * and delivered as `watchboard.digest` payloads into one board session, opened lazily at the first
 * digest; after `--watchboard-rotate` digests the next one opens a successor session and the old
 * one hears `watchboard.rotated`. Flushes run one at a time: when the batch fills (the dispatcher
 * awaits it, unless a flush already running takes the entry itself, D450) and on a tick of a quarter of `--watchboard-flush` (1 s to 5 s). A digest that could
 * not be delivered goes back into the buffer for the next flush. Each delivered entry is bound to
 * the board session in the dedup cache, so its duplicates page nothing; one released meanwhile
 * (it turned critical and opened its own session) is not (D456).
 */
import type { Logger } from "../telemetry/logger.ts";
import type { DedupCache } from "./core/dedup-cache.ts";
import type { IncidentSink } from "./core/sink.ts";
import {
  BoardBuffer,
  type BoardEntry,
  BoardState,
  type DigestPayload,
  type WatchboardSettings,
  buildDigestPayload,
  buildRotatedPayload,
  fitDigest,
  tickPeriodMs,
} from "./core/watchboard.ts";
import { type RoutingMetrics, routingMetrics } from "./routing-metrics.ts";
import type { WatcherMetrics } from "./watcher-metrics.ts";

export interface WatchboardDeps {
  sink: IncidentSink;
  dedup: DedupCache;
  logger: Logger;
  metrics: WatcherMetrics;
  now: () => number;
}

/** How long the shutdown flush may take. */
const FINAL_FLUSH_MS = 3000;

export class Watchboard {
  private readonly buffer: BoardBuffer;
  private readonly state: BoardState;
  /** Keys of the digest being delivered: still held, so their duplicates open nothing. */
  private readonly inFlight = new Set<string>();
  /** Every board session this watcher opened (a binding to one is a board entry, not an incident). */
  private readonly boards = new Set<string>();
  private chain: Promise<void> = Promise.resolve();
  /** A flush is delivering: it takes whatever falls due meanwhile itself. */
  private flushing = false;
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly counts: RoutingMetrics;

  constructor(
    private readonly settings: WatchboardSettings & { injectMaxBytes: number },
    private readonly deps: WatchboardDeps,
  ) {
    this.buffer = new BoardBuffer(settings);
    this.state = new BoardState(settings.rotate);
    this.counts = routingMetrics(deps.metrics, settings.cluster);
    deps.metrics.gauge("watchboard_buffered", "warnings waiting for a watchboard digest", () => this.buffer.size);
  }

  get buffered(): number {
    return this.buffer.size;
  }

  /** The board session digests go to now (undefined before the first digest). */
  get sessionId(): string | undefined {
    return this.state.sessionId;
  }

  /** Whether the key waits for a digest (buffered or being delivered). */
  holds(key: string): boolean {
    return this.buffer.holds(key) || this.inFlight.has(key);
  }

  isBoardSession(sessionId: string | undefined): boolean {
    return sessionId !== undefined && this.boards.has(sessionId);
  }

  /** A new warning: buffered; a full batch is flushed before this resolves (unless a flush already running takes it). */
  async add(entry: BoardEntry): Promise<void> {
    const dropped = this.buffer.add(entry);
    this.counts.watchboardEntries({ kind: entry.kind });
    if (dropped) {
      this.deps.metrics.deliveriesDropped({ cause: "watchboard_overflow" });
      this.deps.logger.warn(
        `watchboard: buffer full (no digest delivered for a while); dropped the oldest warning ${dropped.kind} ${dropped.kindOfObject}=${dropped.namespace}/${dropped.name}`,
      );
    }
    // A flush already delivering loops while anything is due: this lane need not wait on the board (D450).
    if (this.buffer.due(this.deps.now()) && !this.flushing) await this.flush();
  }

  /** A duplicate of a buffered warning: counted into its entry. */
  note(key: string, lastSeen: number): boolean {
    return this.buffer.note(key, lastSeen);
  }

  /** A buffered warning escalated to critical: it leaves the board (its incident opens instead). */
  release(key: string): void {
    this.buffer.drop(key);
    // A digest in flight that carries it must not bind it to the board when it lands (D456).
    this.inFlight.delete(key);
  }

  /** Delivers every due digest, after any flush already running. */
  flush(force = false): Promise<void> {
    const run = this.chain.then(() => this.flushDue(force));
    this.chain = run.catch(() => undefined);
    return run;
  }

  start(): void {
    this.timer ??= setInterval(() => void this.flush(), tickPeriodMs(this.settings.flushMs));
    this.timer.unref?.();
  }

  /** Stops the tick and delivers what is buffered, within 3 s. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    let timeout: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<void>((resolve) => {
      timeout = setTimeout(resolve, FINAL_FLUSH_MS);
    });
    await Promise.race([this.flush(true), expired]);
    clearTimeout(timeout);
    if (this.buffer.size > 0)
      this.deps.logger.warn(`watchboard: ${this.buffer.size} buffered warnings not delivered at shutdown`);
  }

  private async flushDue(force: boolean): Promise<void> {
    this.flushing = true;
    try {
      await this.deliverDue(force);
    } finally {
      this.flushing = false;
    }
  }

  private async deliverDue(force: boolean): Promise<void> {
    let drain = force;
    while (this.buffer.due(this.deps.now()) || (drain && this.buffer.size > 0)) {
      const taken = this.buffer.take();
      for (const entry of taken) this.inFlight.add(entry.key);
      try {
        const { sent, sessionId } = await this.deliver(taken);
        // What did not fit (or was not delivered) is first in line for the next digest.
        this.buffer.restore(taken.slice(sessionId ? sent : 0).filter((entry) => this.inFlight.has(entry.key)));
        if (!sessionId) return;
        for (const entry of taken.slice(0, sent))
          if (this.inFlight.has(entry.key)) this.deps.dedup.bind(entry.key, sessionId);
        if (sent < taken.length) drain = true;
      } finally {
        for (const entry of taken) this.inFlight.delete(entry.key);
      }
    }
  }

  /**
   * One digest into the board (opening or rotating it first when due), fitted to
   * `--inject-max-bytes`: how many of the entries it carried and the session it landed in.
   */
  private async deliver(taken: BoardEntry[]): Promise<{ sent: number; sessionId?: string }> {
    const { payload, rest } = this.digestOf(taken);
    const sessionId = await this.send(payload);
    return { sent: taken.length - rest.length, ...(sessionId ? { sessionId } : {}) };
  }

  private digestOf(taken: BoardEntry[]): { payload: DigestPayload; rest: BoardEntry[] } {
    const digest = this.state.nextDigest();
    const at = this.deps.now();
    return fitDigest(
      (entries, cap) => buildDigestPayload(this.settings.cluster, digest, entries, at, cap),
      taken,
      this.settings.injectMaxBytes,
    );
  }

  private async send(payload: DigestPayload): Promise<string | undefined> {
    const { sink, logger, metrics } = this.deps;
    const entries = payload.entries;
    const step = this.state.nextStep();
    if (step === "append" && this.state.sessionId) {
      const appended = await sink.append(this.state.sessionId, payload);
      if (!appended.ok && !appended.queued) {
        metrics.injectErrors({ reason: "watchboard", http_code: "inject" });
        logger.error(
          `watchboard: digest into ${this.state.sessionId} failed: ${appended.error}; kept for the next flush`,
        );
        return undefined;
      }
      this.state.appended();
      this.counts.watchboardDigests();
      logger.info(`watchboard: digest of ${entries.length} → sid=${this.state.sessionId} (seq=${payload.sequence})`);
      return this.state.sessionId;
    }
    const opened = await sink.open(payload);
    if (opened.id === undefined) {
      metrics.sessionCreates({ outcome: "error" });
      metrics.injectErrors({ reason: "watchboard", http_code: "session_create" });
      logger.error(`watchboard: opening a board session failed: ${opened.error}; kept for the next flush`);
      return undefined;
    }
    metrics.sessionCreates({ outcome: "ok" });
    const previous = this.state.sessionId;
    if (step === "rotate" && previous) await this.announceRotation(previous, opened.id);
    this.state.opened(opened.id);
    this.counts.watchboardDigests();
    this.boards.add(opened.id);
    logger.info(
      `watchboard: digest of ${entries.length} → sid=${opened.id} (new board, generation=${this.state.generation})`,
    );
    return opened.id;
  }

  /** `watchboard.rotated` into the old board, naming its successor (a failure is logged, not retried). */
  private async announceRotation(previous: string, successor: string): Promise<void> {
    const { sink, logger, metrics, now } = this.deps;
    const rotated = buildRotatedPayload(
      this.settings.cluster,
      this.state.generation,
      successor,
      this.state.digests,
      now(),
    );
    const appended = await sink.append(previous, rotated);
    if (!appended.ok && !appended.queued) {
      metrics.injectErrors({ reason: "watchboard", http_code: "inject" });
      logger.error(`watchboard: rotated into ${previous} failed: ${appended.error}`);
    }
    this.counts.watchboardRotations();
    logger.info(`watchboard: rotated sid=${previous} → sid=${successor} after ${this.state.digests} digests`);
  }
}
