/**
 * PromptBroker: a session's permission prompts between the gate and the operators. Publishes
 * each prompt to the `/perms/stream` listeners, expires it on the approval timeout, and records
 * prompts and answers as durable rows (`gate/prompt`, `gate/answer`) so a daemon restarted while
 * a prompt was pending still knows it (answering it is then 410 turn-ended).
 */
import type { CommittedRow } from "../core/events.ts";
import type { PromptFrame } from "../core/permission-gate.ts";

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

/** Prompt ids issued in the log and never answered: their turns died with the old process. */
export function unansweredPrompts(rows: readonly CommittedRow[]): string[] {
  const open = new Set<string>();
  for (const { event } of rows) {
    if (event.kind !== "audit") continue;
    const id = typeof event.metadata.prompt_id === "string" ? event.metadata.prompt_id : undefined;
    if (id === undefined) continue;
    if (event.name === "permission-prompt") open.add(id);
    if (event.name === "permission-answer" || event.name === "permission-gone") open.delete(id);
  }
  return [...open];
}
