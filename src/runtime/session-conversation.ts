/**
 * SessionConversation: what a session's model turns work on, rebuilt from its committed rows:
 * the conversation (rewritten in place by a compaction), its name in the turn workers' cache
 * (renewed when a compaction rewrites it), the usage ledger, and the compaction run between
 * turns (D155) or on request, with the `compacting` flag that holds the next turn back (D166).
 * Knows nothing of scheduling: the actor asks it to compact and reads the flag.
 */
import type { CommittedRow } from "../core/events.ts";
import { uuidv7 } from "../core/ids.ts";
import type { ChatMessage } from "../core/model.ts";
import type { UsageLedger } from "../core/usage.ts";
import type { ActorContext } from "./actor-types.ts";
import { type CheckpointResult, type CompactionResult, Compactor } from "./compactor.ts";
import { type ContextInfo, contextInfoOf, rebuildFromRows } from "./history.ts";
import type { Journal } from "./session-journal.ts";

export class SessionConversation {
  /** The conversation the next turn sends the model; turns append to it in place. */
  readonly history: ChatMessage[];
  readonly ledger: UsageLedger;
  readonly #compactor: Compactor;
  /** Names the conversation in the turn workers' cache (a rebuilt session gets a new one). */
  #key = `conv-${uuidv7()}`;
  #compacting = false;

  constructor(context: ActorContext, journal: Journal, rows: readonly CommittedRow[]) {
    const state = rebuildFromRows(rows);
    this.history = state.history;
    this.ledger = state.ledger;
    this.#compactor = new Compactor(
      {
        context,
        history: this.history,
        ledger: this.ledger,
        journal,
        renewConversationKey: () => {
          context.pool.forget(this.#key);
          this.#key = `conv-${uuidv7()}`;
        },
      },
      state.context,
    );
  }

  /** Names the conversation in the turn workers' cache. */
  get key(): string {
    return this.#key;
  }

  /** A compaction is running: no turn may start. */
  get compacting(): boolean {
    return this.#compacting;
  }

  /** GET /context. */
  contextInfo(): ContextInfo {
    return contextInfoOf(this.#compactor.stats, this.ledger.digests);
  }

  /** After a turn: compact when the conversation passed the trigger. A failure is logged, never thrown. */
  async compactAfterTurn(logError: (message: string) => void): Promise<void> {
    this.#compacting = true;
    try {
      await this.#compactor.afterTurn().catch((error: unknown) => logError(`compaction: ${String(error)}`));
    } finally {
      this.#compacting = false;
    }
  }

  /** POST /slash/compact: summarize now (the caller checked that nothing runs). */
  async compactNow(focus?: string): Promise<CompactionResult> {
    this.#compacting = true;
    try {
      return await this.#compactor.compactNow(focus);
    } finally {
      this.#compacting = false;
    }
  }

  /** POST /slash/done: checkpoint now (D356; the caller checked that nothing runs). */
  async checkpointNow(note?: string): Promise<CheckpointResult> {
    this.#compacting = true;
    try {
      return await this.#compactor.checkpointNow(note);
    } finally {
      this.#compacting = false;
    }
  }

  /** Stop a summary call in flight (interrupt, shutdown, delete): it ends as canceled and writes nothing. */
  cancelCompaction(): void {
    this.#compactor.cancel();
  }
}
