/**
 * SessionInbox: a live session's durable inbox mirror. Commits an injected message and publishes
 * its `inbox` queued frame; refuses one past the caps (429) before anything is written; answers a
 * message already injected under its idempotency key as a duplicate, writing nothing. Holds the
 * undrained items in arrival order and a bare wake, and hands both to the next execution; closed
 * when the session is deleted (an inject then answers 404, even one whose row was committing).
 * Decides nothing about when an execution runs (the actor's scheduler does).
 */
import { activePromptTrace } from "../telemetry/turn-trace.ts";
import { SparError } from "../core/errors.ts";
import { uuidv7 } from "../core/ids.ts";
import { InboxRoom } from "../core/inbox-room.ts";
import { type SessionKey, sessionKeyString } from "../core/session-key.ts";
import type { InboxItem } from "../core/session-store.ts";
import type { ActorContext } from "./actor-types.ts";
import { idempotentPromptId } from "./idempotent-prompt.ts";
import type { Journal } from "./session-journal.ts";

export interface SessionInboxDeps {
  key: SessionKey;
  /** Where inbox rows are committed, the clock, and the caps. */
  context: Pick<ActorContext, "store" | "now" | "inboxCaps">;
  journal: Pick<Journal, "frame">;
}

export interface EnqueueOptions {
  /** False for the operator's steer on resume: the resume already happened, no cap applies. */
  capped?: boolean;
  idempotencyKey?: string;
}

export class SessionInbox {
  /** Undrained items in arrival order (the operator's `abandon` empties it in place). */
  readonly items: InboxItem[];
  readonly #deps: SessionInboxDeps;
  readonly #room: InboxRoom;
  #bareWake = false;
  #closed = false;
  /** Injects between their first await and their effect (an eviction must wait for them). */
  #committing = 0;

  constructor(items: InboxItem[], deps: SessionInboxDeps) {
    this.items = items;
    this.#deps = deps;
    this.#room = new InboxRoom(deps.context.inboxCaps);
  }

  /** The session is being deleted: it takes no more messages (and runs no more turns). */
  close(): void {
    this.#closed = true;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** A closed inbox's session is gone to its callers: 404. */
  refuseIfClosed(): void {
    if (this.#closed) throw new SparError("not_found", `session not found: ${this.#deps.key.id}`);
  }

  /** Nothing queued, no bare wake, no inject being committed. */
  get empty(): boolean {
    return this.#committing === 0 && this.items.length === 0 && !this.#bareWake;
  }

  /** Work that wakes a turn is waiting: a bare wake or a message asking to wake. */
  get due(): boolean {
    return this.#bareWake || this.wakeWaiting;
  }

  /** A message asking to wake is waiting. */
  get wakeWaiting(): boolean {
    return this.items.some((item) => item.wake);
  }

  /**
   * Commit the message to the inbox, then publish `inbox` queued. With an idempotency key a
   * message injected before under it is answered `duplicate` and nothing is written or published.
   */
  async enqueue(
    message: string,
    wake: boolean,
    options: EnqueueOptions,
  ): Promise<{ promptId: string; duplicate?: true }> {
    const deps = this.#deps;
    const key = options.idempotencyKey;
    const promptId = key === undefined ? uuidv7() : idempotentPromptId(sessionKeyString(deps.key), key);
    if (key !== undefined && this.items.some((waiting) => waiting.promptId === promptId))
      return { promptId, duplicate: true };
    const item: InboxItem = { promptId, message, queuedAt: deps.context.now().toISOString(), wake };
    // The request queueing it, so its turn's span links back, even after a restart (D301), with its baggage (D341).
    const trace = activePromptTrace();
    if (trace !== undefined) item.trace = trace;
    const releaseRoom = options.capped === false ? () => {} : this.#room.reserve(this.items, message);
    this.#committing++;
    try {
      await deps.context.store.enqueueInbox(deps.key, item);
      // A DELETE that began meanwhile removes the inbox with the session: tell the caller so.
      this.refuseIfClosed();
      this.items.push(item);
    } catch (error) {
      // The store holds this prompt id already: the keyed message was injected before (and maybe drained).
      if (key !== undefined && error instanceof SparError && error.code === "conflict")
        return { promptId, duplicate: true };
      throw error;
    } finally {
      this.#committing--;
      releaseRoom();
    }
    deps.journal.frame({ type: "inbox", state: "queued", promptId: item.promptId, queuedAt: item.queuedAt });
    return { promptId };
  }

  /** POST /wake without a prompt: the next turn runs even with nothing queued. */
  wakeBare(): void {
    this.#bareWake = true;
  }

  /** A halted session refused the turn: the bare wake is spent (the messages stay). */
  dropBareWake(): void {
    this.#bareWake = false;
  }

  /** Everything waiting, for the execution starting now: the items (emptied) and whether a bare wake asked for it. */
  take(): { items: InboxItem[]; bare: boolean } {
    const bare = this.#bareWake;
    this.#bareWake = false;
    return { items: this.items.splice(0), bare };
  }

  /** The execution could not start: its items wait again, ahead of anything queued since. */
  giveBack(items: readonly InboxItem[]): void {
    this.items.unshift(...items);
  }
}
