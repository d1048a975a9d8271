/**
 * TurnCalls: the abort signals of the tool calls each turn has running, so ending a turn (done,
 * cancelled, cut by a guardrail) aborts every call it started. Shared by the agent's gated tools
 * and svc's coordinator tools.
 */
export class TurnCalls {
  readonly #running = new Map<string, Set<AbortController>>();

  /** Run `body` with a signal that aborts when `turnId` ends. */
  async run<T>(turnId: string, body: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    const calls = this.#running.get(turnId) ?? new Set<AbortController>();
    calls.add(controller);
    this.#running.set(turnId, calls);
    try {
      return await body(controller.signal);
    } finally {
      calls.delete(controller);
      if (calls.size === 0) this.#running.delete(turnId);
    }
  }

  /** Abort every call `turnId` has running. */
  end(turnId: string): void {
    for (const controller of this.#running.get(turnId) ?? []) controller.abort();
    this.#running.delete(turnId);
  }
}
