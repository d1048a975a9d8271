/**
 * ContinueSlot: the one synthesized continue turn a session may have waiting. Auto-continue arms
 * it (at once, or after a backoff for a transient failure); the next turn takes it, unless a
 * human message arrives first, which supersedes it. Interrupts, deletes and shutdown clear it.
 */
import type { ContinueCause } from "../core/auto-continue.ts";

export interface ArmedContinue {
  cause: ContinueCause;
  /** The interrupted turn's invocation id. */
  interruption: string;
  /** Prompt id announced on the `inbox` queued frame and used for the turn. */
  promptId: string;
  /** 1-based re-drive number in the interruption sequence. */
  attempt: number;
}

export class ContinueSlot {
  /** Armed, or announced and waiting out its backoff. */
  #continuation: ArmedContinue | undefined;
  #ready = false;
  #timer: ReturnType<typeof setTimeout> | undefined;

  /** Armed, or waiting out its backoff. */
  get occupied(): boolean {
    return this.#continuation !== undefined;
  }

  /** Armed and ready for the next turn. */
  get ready(): boolean {
    return this.#ready;
  }

  /** Arm now, or after `delayMs`; `onReady` runs when it is armed (to schedule a turn). */
  arm(continuation: ArmedContinue, delayMs: number, onReady: () => void): void {
    this.clear();
    this.#continuation = continuation;
    const ready = () => {
      this.#timer = undefined;
      this.#ready = true;
      onReady();
    };
    if (delayMs <= 0) ready();
    else this.#timer = setTimeout(ready, delayMs);
  }

  /** The armed continuation for the turn starting now (emptying the slot); undefined while it waits out its backoff. */
  take(): ArmedContinue | undefined {
    return this.#ready ? this.clear() : undefined;
  }

  /** Empty the slot, returning what it held (armed or still waiting). */
  clear(): ArmedContinue | undefined {
    const continuation = this.#continuation;
    this.#continuation = undefined;
    this.#ready = false;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    return continuation;
  }
}
