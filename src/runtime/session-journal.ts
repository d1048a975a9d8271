/**
 * SessionJournal: the one way a live session writes. Created once per session and handed to
 * every collaborator that records something (operator controls, the permission gate, the
 * guardrails, the compactor, auto-continue, the executor), instead of three closures each.
 * Builds event headers (a fresh UUIDv7 id, the session clock's time), appends rows through the
 * store's group commit and publishes them on the session's feed in commit order, and publishes
 * live frames on the same feed. Publication order is enqueue order (D9, D30): a frame published
 * after an append goes out after that append's rows; a refused append publishes nothing.
 * Knows nothing of turns, inboxes or scheduling.
 */
import type { EventLog } from "../core/event-log.ts";
import type { CommittedRow, EventHeader, LiveFrame, SessionEvent } from "../core/events.ts";
import { uuidv7 } from "../core/ids.ts";
import type { SessionKey } from "../core/session-key.ts";
import { type SessionFeed, framePublication, rowPublication } from "./session-feed.ts";

/** What a session's collaborators record through: the SessionJournal, or a fake in a unit test. */
export interface Journal {
  /** The header of a new event: fresh id, now, the invocation it belongs to and its author. */
  header(invocationId: string, author: string): EventHeader;
  /**
   * Commit rows (draining the named inbox prompts in the same transaction), then publish the
   * `before` frames and the rows, after everything published before. Rejects when the store
   * refuses the write; nothing of it is published then.
   */
  append(events: SessionEvent[], drained?: readonly string[], before?: readonly LiveFrame[]): Promise<CommittedRow[]>;
  /** Publish a live frame after everything published before it. */
  frame(frame: LiveFrame): void;
}

export interface SessionJournalOptions {
  key: SessionKey;
  /** Where rows are committed (the store's group commit). */
  log: Pick<EventLog, "append">;
  /** The session's ordered publication queue. */
  feed: SessionFeed;
  /** The session's clock (event timestamps). */
  clock: { now(): Date };
}

export class SessionJournal implements Journal {
  readonly key: SessionKey;
  readonly #log: Pick<EventLog, "append">;
  readonly #feed: SessionFeed;
  readonly #clock: { now(): Date };

  constructor(options: SessionJournalOptions) {
    this.key = options.key;
    this.#log = options.log;
    this.#feed = options.feed;
    this.#clock = options.clock;
  }

  header(invocationId: string, author: string): EventHeader {
    return { id: uuidv7(), ts: this.#clock.now().toISOString(), invocationId, author };
  }

  append(
    events: SessionEvent[],
    drained: readonly string[] = [],
    before: readonly LiveFrame[] = [],
  ): Promise<CommittedRow[]> {
    const committed = this.#log.append(this.key, events, { drainedPromptIds: drained });
    this.#feed.enqueue(committed.then((rows) => [...before.map(framePublication), ...rows.map(rowPublication)]));
    return committed;
  }

  frame(frame: LiveFrame): void {
    this.#feed.frame(frame);
  }
}
