/**
 * FollowerFeeds: event streams of sessions another daemon serves (D488). A subscriber attached to
 * a daemon that does not hold the session's lease reads the log: each follower feed is a
 * SessionFeed whose steps are reads of the log up to the head an announcement named, in order, so
 * its subscribers get every committed row once and in seq order, whichever daemon wrote it. The
 * announcement is only a wake-up: after the announcements' connection comes back every feed reads
 * up to the log's head. Live frames (token deltas, status) stay on the holder's daemon. A feed
 * lives while it has subscribers.
 */
import type { EventLog } from "../core/event-log.ts";
import type { Publication } from "../core/events.ts";
import { type SessionKey, sessionKeyString } from "../core/session-key.ts";
import { type FeedSink, SessionFeed, type Subscription, rowPublication } from "./session-feed.ts";

/** Rows read from the log per step page. */
const PAGE = 500;
/** Reads of one step before its subscribers are hung up (about 5 s in all). */
const READ_ATTEMPTS = 10;

interface Follower {
  key: SessionKey;
  feed: SessionFeed;
  /** The highest seq a queued step reads up to. */
  requested: number;
}

export class FollowerFeeds {
  readonly #log: EventLog;
  readonly #followers = new Map<string, Follower>();
  /** Sessions whose first feed is being opened: the highest head announced meanwhile. */
  readonly #opening = new Map<string, { waiting: number; announced: number }>();

  constructor(log: EventLog) {
    this.#log = log;
  }

  get subscriberCount(): number {
    let count = 0;
    for (const follower of this.#followers.values()) count += follower.feed.subscriberCount;
    return count;
  }

  /** Attach a sink from `since`: the log's rows up to its head now, then every row announced later. */
  async subscribe(key: SessionKey, sink: FeedSink, since: number): Promise<Subscription> {
    const name = sessionKeyString(key);
    let follower = this.#followers.get(name);
    if (follower === undefined) {
      // Announcements that arrive while the head is read are kept, not dropped (D531).
      const opening = this.#opening.get(name) ?? { waiting: 0, announced: 0 };
      opening.waiting++;
      this.#opening.set(name, opening);
      let head: number;
      try {
        head = await this.#log.head(key);
      } finally {
        if (--opening.waiting === 0) this.#opening.delete(name);
      }
      follower = this.#followers.get(name) ?? { key, feed: new SessionFeed(key, this.#log, head), requested: head };
      this.#followers.set(name, follower);
      this.advance(key, opening.announced);
    }
    const subscription = follower.feed.subscribe(sink, since);
    const current = follower;
    return {
      replayed: subscription.replayed,
      unsubscribe: () => {
        subscription.unsubscribe();
        if (current.feed.subscriberCount === 0 && this.#followers.get(name) === current) this.#followers.delete(name);
      },
    };
  }

  /** The session's log grew to `head` (an announcement): its followers read the new rows. */
  advance(key: SessionKey, head: number): void {
    const name = sessionKeyString(key);
    const follower = this.#followers.get(name);
    if (follower === undefined) {
      const opening = this.#opening.get(name);
      if (opening !== undefined) opening.announced = Math.max(opening.announced, head);
      return;
    }
    if (head <= follower.requested) return;
    const after = follower.requested;
    follower.requested = head;
    follower.feed.enqueue(this.#readOrHangUp(follower, after, head));
  }

  /** Announcements may have been missed: every feed reads up to its log's head. */
  async catchUp(): Promise<void> {
    await Promise.all(
      [...this.#followers.values()].map(async (follower) => {
        try {
          this.advance(follower.key, await this.#log.head(follower.key));
        } catch {
          // The next announcement, or the next reconnect, reads it.
        }
      }),
    );
  }

  /** Hang up every follower subscriber (daemon stopping). */
  closeAll(reason: string): void {
    for (const follower of this.#followers.values()) follower.feed.closeAll(reason);
    this.#followers.clear();
  }

  /**
   * The rows, read again after a failure (the feed waits, so order holds); when the store stays
   * down the feed's subscribers are hung up (they resume from their last seq) rather than skipped.
   */
  async #readOrHangUp(follower: Follower, after: number, upto: number): Promise<Publication[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#read(follower.key, after, upto);
      } catch (error) {
        if (attempt >= READ_ATTEMPTS) {
          if (this.#followers.get(sessionKeyString(follower.key)) === follower)
            this.#followers.delete(sessionKeyString(follower.key));
          follower.feed.closeAll(`reading the session's log failed: ${String(error)}`);
          throw error;
        }
        // Pacing: the store is failing; the next attempt waits a little longer.
        await Bun.sleep(100 * attempt);
      }
    }
  }

  async #read(key: SessionKey, after: number, upto: number): Promise<Publication[]> {
    const publications: Publication[] = [];
    let cursor = after;
    while (cursor < upto) {
      const rows = await this.#log.read(key, cursor, PAGE, upto);
      if (rows.length === 0) break;
      for (const row of rows) publications.push(rowPublication(row));
      cursor = rows[rows.length - 1]?.seq ?? upto;
    }
    return publications;
  }
}
