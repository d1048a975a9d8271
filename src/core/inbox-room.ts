/**
 * InboxRoom: whether one more message fits a session's inbox. A session asked not to wake
 * (`wake: false`), parked or halted keeps queueing, so without a bound one caller fills memory
 * and the store; past a cap an inject is refused (429) before anything is written. Counts the
 * messages waiting and their UTF-8 bytes, plus those whose inbox row is being committed. The
 * waiting list is read as it is, so whoever drains or drops messages needs to tell nobody.
 */
import { SparError } from "./errors.ts";
import { utf8Length } from "./permission-answer.ts";

export interface InboxCaps {
  maxMessages: number;
  /** UTF-8 bytes of the waiting messages. */
  maxBytes: number;
}

export const DEFAULT_INBOX_CAPS: InboxCaps = Object.freeze({ maxMessages: 1000, maxBytes: 4 * 1024 * 1024 });

/** Seconds a refused caller is asked to wait: a turn drains the inbox. */
const RETRY_AFTER_SECONDS = 5;

interface Waiting {
  readonly message: string;
}

export class InboxRoom {
  readonly #caps: InboxCaps;
  /** Byte sizes of waiting messages, measured once each. */
  readonly #sizes = new WeakMap<Waiting, number>();
  #committingMessages = 0;
  #committingBytes = 0;

  constructor(caps: InboxCaps) {
    this.#caps = caps;
  }

  /**
   * Reserve room for `message` next to `waiting` or throw a 429 problem naming the cap. The
   * returned release ends the reservation once the message is in `waiting` or was not written.
   */
  reserve(waiting: readonly Waiting[], message: string): () => void {
    const bytes = utf8Length(message);
    const messages = waiting.length + this.#committingMessages;
    if (messages + 1 > this.#caps.maxMessages) {
      throw this.#full(
        `this session's inbox holds its maximum of ${this.#caps.maxMessages} messages waiting for a turn`,
      );
    }
    const held = this.#bytesOf(waiting) + this.#committingBytes;
    if (held + bytes > this.#caps.maxBytes) {
      throw this.#full(
        `this session's inbox would pass its maximum of ${this.#caps.maxBytes} bytes waiting for a turn (${held} held, ${bytes} more)`,
      );
    }
    this.#committingMessages++;
    this.#committingBytes += bytes;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#committingMessages--;
      this.#committingBytes -= bytes;
    };
  }

  #bytesOf(waiting: readonly Waiting[]): number {
    let total = 0;
    for (const item of waiting) {
      let size = this.#sizes.get(item);
      if (size === undefined) {
        size = utf8Length(item.message);
        this.#sizes.set(item, size);
      }
      total += size;
    }
    return total;
  }

  #full(message: string): SparError {
    return new SparError("too_many_requests", `${message}; retry once a turn has drained it`, {
      retry_after_seconds: RETRY_AFTER_SECONDS,
    });
  }
}
