/**
 * StartRetry: the retry a session waits out when the store refused a turn's first write. Each
 * refusal in a row doubles the wait (0.5 s to 30 s); a turn that starts resets it. Owns only the
 * timer and the delay: it decides nothing about whether a turn is due (the actor's `schedule` does).
 */

/** Shortest and longest wait before a refused turn start is tried again. */
export const START_RETRY_MIN_MS = 500;
export const START_RETRY_MAX_MS = 30_000;

/** The wait after one more refusal, given the previous wait (0 when the last start succeeded). */
export function nextStartRetryMs(previousMs: number): number {
  return Math.min(START_RETRY_MAX_MS, Math.max(START_RETRY_MIN_MS, previousMs * 2));
}

export class StartRetry {
  #timer: ReturnType<typeof setTimeout> | undefined;
  #delayMs = 0;

  /** A retry is waiting to fire. */
  get pending(): boolean {
    return this.#timer !== undefined;
  }

  /** The store refused again: call `onDue` after the next, longer wait. */
  later(onDue: () => void): void {
    this.#delayMs = nextStartRetryMs(this.#delayMs);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      onDue();
    }, this.#delayMs);
  }

  /** A turn started: the next refusal waits the shortest time again. */
  succeeded(): void {
    this.#delayMs = 0;
  }

  /** Drop a waiting retry (the delay is kept: a later refusal still backs off). */
  cancel(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
