/**
 * LivenessWatch: finds peers whose event loop stopped (a synchronous loop holds the worker's
 * thread, so neither cancels nor answers get through). One timer for every watched connection:
 * a connection that is ready and busy gets a ping when it has none outstanding; one whose ping
 * stays unanswered past the window is reported once. Idle connections are not pinged. Closed
 * connections leave the watch on the next tick. Owns only that timing; the owner decides what
 * to do (the turn pool replaces the worker).
 */

/** What the watch needs from a connection (RpcConnection has it). */
export interface Pingable {
  readonly ready: boolean;
  readonly closed: boolean;
  ping(now: number): void;
  pingAge(now: number): number | undefined;
}

export interface WatchOptions {
  /** The peer has work in flight (only such a peer is pinged). */
  busy(): boolean;
  /** Its ping stayed unanswered `silentMs` (more than the window). Reported once per connection. */
  onUnresponsive(silentMs: number): void;
}

/** How often peers are pinged, at most: the window divides this further (a quarter, at least 10 ms). */
const PING_EVERY_MS = 1000;

export class LivenessWatch {
  readonly #windowMs: number;
  readonly #watched = new Map<Pingable, WatchOptions>();
  readonly #timer: ReturnType<typeof setInterval>;

  /** A peer that leaves a ping unanswered longer than `windowMs` is reported. */
  constructor(windowMs: number) {
    this.#windowMs = windowMs;
    this.#timer = setInterval(() => this.check(), Math.min(PING_EVERY_MS, Math.max(10, windowMs / 4)));
    this.#timer.unref?.();
  }

  watch(connection: Pingable, options: WatchOptions): void {
    this.#watched.set(connection, options);
  }

  unwatch(connection: Pingable): void {
    this.#watched.delete(connection);
  }

  /** One tick (the timer calls it; exposed for a test that wants no wait). */
  check(now: number = performance.now()): void {
    const silent: Array<[WatchOptions, number]> = [];
    for (const [connection, options] of this.#watched) {
      if (connection.closed) {
        this.#watched.delete(connection);
        continue;
      }
      if (!connection.ready) continue;
      const age = connection.pingAge(now);
      if (age === undefined) {
        if (options.busy()) connection.ping(now);
      } else if (age > this.#windowMs) {
        this.#watched.delete(connection);
        silent.push([options, age]);
      }
    }
    for (const [options, age] of silent) options.onUnresponsive(age);
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#watched.clear();
  }
}
