/**
 * PauseGate: whether a session is parked, since when and why. A parked session starts no turn;
 * messages still queue (inject never un-parks, protocol 1.11.0); only a resume releases it.
 * Pure state.
 */
export class PauseGate {
  #since: string | undefined;
  #reason: string | undefined;

  get paused(): boolean {
    return this.#since !== undefined;
  }

  get since(): string | undefined {
    return this.#since;
  }

  get reason(): string | undefined {
    return this.#reason;
  }

  /** Park; false when already parked (nothing changes then). */
  pause(reason: string, at: string): boolean {
    if (this.#since !== undefined) return false;
    this.#since = at;
    this.#reason = reason;
    return true;
  }

  /** Release; false when not parked. */
  resume(): boolean {
    if (this.#since === undefined) return false;
    this.#since = undefined;
    this.#reason = undefined;
    return true;
  }
}

export type ResumeMode = "continue" | "steer" | "abandon";

/** How a steer message is framed for the model: an operator redirecting interrupted work. */
export function steerMessage(text: string): string {
  return `[operator steer after an interrupt] ${text}`;
}
