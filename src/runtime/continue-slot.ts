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
  #armed: ArmedContinue | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;

  /** Armed, or waiting out its backoff. */
  get occupied(): boolean {
    return this.#armed !== undefined || this.#timer !== undefined;
  }

  /** Armed and ready for the next turn. */
  get ready(): boolean {
    return this.#armed !== undefined;
  }

  /** Arm now, or after `delayMs`; `onReady` runs when it is armed (to schedule a turn). */
  arm(continuation: ArmedContinue, delayMs: number, onReady: () => void): void {
    this.clear();
    const ready = () => {
      this.#timer = undefined;
      this.#armed = continuation;
      onReady();
    };
    if (delayMs <= 0) ready();
    else this.#timer = setTimeout(ready, delayMs);
  }

  /** Empty the slot, returning what was armed. */
  take(): ArmedContinue | undefined {
    const armed = this.#armed;
    this.clear();
    return armed;
  }

  clear(): void {
    this.#armed = undefined;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
