/**
 * CallsFirst: approved calls run before the agents' turns that follow the approvals. A burst of
 * /resume answers (an operator approving a backlog) would otherwise interleave each approved
 * call with the model turns of the answers before it, and the last call would wait for hundreds
 * of model turns. A turn after an answer waits until no approved call is being carried out and a
 * short lull has passed (`lingerMs`, so answers still arriving get theirs in first), at most
 * `maxWaitMs` (a steady stream of answers cannot starve the turns).
 */
export class CallsFirst {
  readonly #lingerMs: number;
  readonly #maxWaitMs: number;
  #active = 0;
  #lastEnded = 0;

  constructor(options: { lingerMs: number; maxWaitMs: number }) {
    this.#lingerMs = options.lingerMs;
    this.#maxWaitMs = options.maxWaitMs;
  }

  /** Carry out an approved call (counted while it runs). */
  async call<T>(work: () => Promise<T>): Promise<T> {
    this.#active++;
    try {
      return await work();
    } finally {
      this.#active--;
      this.#lastEnded = performance.now();
    }
  }

  /** Resolves when the calls carried out now are done and a lull has passed, or after maxWaitMs. */
  async turnsMayRun(): Promise<void> {
    const deadline = performance.now() + this.#maxWaitMs;
    for (;;) {
      const now = performance.now();
      if (now >= deadline) return;
      if (this.#active === 0 && now - this.#lastEnded >= this.#lingerMs) return;
      await Bun.sleep(Math.min(this.#lingerMs, deadline - now));
    }
  }
}
