/**
 * FeedTap: a session feed subscriber that hands each publication to a callback as it arrives (a
 * protocol listener encoding a run's frames). It never overflows: the callback must only encode
 * and queue, never wait. Closing (the session deleted, the daemon stopping) is reported once.
 */
import type { Publication } from "../core/events.ts";
import type { FeedSink } from "./session-feed.ts";

/** A subscription cursor past every row: the subscriber hears live publications only. */
export const LIVE_ONLY = Number.MAX_SAFE_INTEGER;

export class FeedTap implements FeedSink {
  readonly replayBatch = 64;
  readonly bytesDelivered = 0;
  closed = false;
  readonly #onPublication: (publication: Publication) => void;
  readonly #onClose: (reason: string) => void;

  constructor(onPublication: (publication: Publication) => void, onClose: (reason: string) => void = () => {}) {
    this.#onPublication = onPublication;
    this.#onClose = onClose;
  }

  deliver(publication: Publication): boolean {
    this.#onPublication(publication);
    return true;
  }

  whenWritable(): Promise<void> {
    return Promise.resolve();
  }

  close(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.#onClose(reason);
  }
}
