/**
 * PromptBroker: a session's permission prompts between the gate and the operators. Publishes
 * each prompt to the `/perms/stream` listeners, expires it on the approval timeout, and records
 * prompts and answers as durable rows (`gate/prompt`, `gate/answer`) so a daemon restarted while
 * a prompt was pending still knows it (answering it is then 410 turn-ended).
 */
import type { CommittedRow } from "../core/events.ts";
import type { PromptFrame } from "../core/permission-gate.ts";
import type { GoneReason } from "../core/permission-shapes.ts";

export type PromptListener = (prompt: PromptFrame) => void;

export class PromptBroker {
  readonly #listeners = new Set<PromptListener>();

  listen(listener: PromptListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  get listenerCount(): number {
    return this.#listeners.size;
  }

  publish(prompt: PromptFrame): void {
    for (const listener of this.#listeners) listener(prompt);
  }
}

export interface ClosedPrompt {
  id: string;
  reason: GoneReason;
}

/**
 * Prompts of the log that can no longer be answered, and why: one closed before the restart
 * keeps its recorded reason (expired, turn-ended); one never answered died with the old process
 * (turn-ended). Answering either after a restart is the same 410 it was before (D166). Answered
 * prompts are left out: a late answer to one is "already answered" (404), as it was live.
 */
export function closedPrompts(rows: readonly CommittedRow[]): ClosedPrompt[] {
  const state = new Map<string, GoneReason | "open">();
  for (const { event } of rows) {
    if (event.kind !== "audit") continue;
    const id = typeof event.metadata.prompt_id === "string" ? event.metadata.prompt_id : undefined;
    if (id === undefined) continue;
    if (event.name === "permission-prompt") state.set(id, "open");
    if (event.name === "permission-answer") state.delete(id);
    if (event.name === "permission-gone") state.set(id, event.metadata.reason === "expired" ? "expired" : "turn-ended");
  }
  return [...state].map(([id, reason]) => ({ id, reason: reason === "open" ? "turn-ended" : reason }));
}
