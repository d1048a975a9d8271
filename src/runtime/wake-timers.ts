/**
 * WakeTimers (D360): the host's one timer per pending scheduled wake, keyed by session, so a wake
 * fires whether or not its session is in memory (an evicted session is rebuilt when it fires). A
 * later schedule replaces the earlier one; a wake due already fires on the next tick. Knows
 * nothing of what firing does (the host's `fire`); the wake's row in the log is what makes it
 * durable, and the host re-arms every pending one at boot.
 */
import { type SessionKey, sessionKeyString } from "../core/session-key.ts";
import type { ScheduledWake } from "../core/wake-loop.ts";

interface Armed {
  key: SessionKey;
  wake: ScheduledWake;
  timer: ReturnType<typeof setTimeout>;
}

export class WakeTimers {
  readonly #armed = new Map<string, Armed>();
  readonly #fire: (key: SessionKey, wake: ScheduledWake) => void;
  readonly #now: () => number;
  #closed = false;

  constructor(fire: (key: SessionKey, wake: ScheduledWake) => void, now: () => number = Date.now) {
    this.#fire = fire;
    this.#now = now;
  }

  /** Arm (or re-arm with a later schedule) the session's wake. */
  arm(key: SessionKey, wake: ScheduledWake): void {
    if (this.#closed) return;
    const name = sessionKeyString(key);
    const current = this.#armed.get(name);
    if (current) clearTimeout(current.timer);
    const delay = Math.max(0, Date.parse(wake.at) - this.#now());
    const timer = setTimeout(() => {
      if (this.#armed.get(name)?.wake.id !== wake.id) return;
      this.#armed.delete(name);
      this.#fire(key, wake);
    }, delay);
    this.#armed.set(name, { key, wake, timer });
  }

  /** The session's pending wake in this process, if any. */
  pending(key: SessionKey): ScheduledWake | undefined {
    return this.#armed.get(sessionKeyString(key))?.wake;
  }

  /** The session is gone: its wake never fires. */
  clear(key: SessionKey): void {
    const name = sessionKeyString(key);
    const current = this.#armed.get(name);
    if (current) clearTimeout(current.timer);
    this.#armed.delete(name);
  }

  get size(): number {
    return this.#armed.size;
  }

  /** Shutdown: nothing fires any more (the rows stay pending: the next boot re-arms them). */
  close(): void {
    this.#closed = true;
    for (const { timer } of this.#armed.values()) clearTimeout(timer);
    this.#armed.clear();
  }
}
