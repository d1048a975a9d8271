/**
 * SessionFeed: a session's single ordered publication queue and its subscribers.
 *
 * Steps (committed rows, live frames, or a pending commit that resolves to both) are published
 * strictly in the order they were enqueued, so a turn's rows always precede its terminal frame
 * and rows always go out in seq order: docs/attach-api.md#frame-order holds by construction.
 * A new subscriber replays (since, head] from the log at its own pace while live publications
 * wait in a bounded per-subscriber buffer; a subscriber that cannot keep up is closed, never
 * the daemon and never another subscriber.
 */
import type { EventLog } from "../core/event-log.ts";
import type { CommittedRow, LiveFrame, Publication } from "../core/events.ts";
import type { SessionKey } from "../core/session-key.ts";

/** Where publications go: implemented by the surface (e.g. one SSE stream). */
export interface FeedSink {
  /** Deliver one publication; false when the sink overflowed and closed itself. */
  deliver(publication: Publication): boolean;
  /** Resolves when the sink has room for another replay batch, or has closed. */
  whenWritable(): Promise<void>;
  /** Rows a replay may hand over between waits on `whenWritable` (well under the sink's bound). */
  readonly replayBatch: number;
  /** Bytes the sink has accepted so far: a replay paces itself by volume as well as by rows. */
  readonly bytesDelivered: number;
  readonly closed: boolean;
  /** Close the sink (session deleted, daemon stopping, subscriber too slow). */
  close(reason: string): void;
}

export interface Subscription {
  /** Resolves when the replay has been handed to the sink. */
  readonly replayed: Promise<void>;
  unsubscribe(): void;
}

type Step = Publication[] | Promise<Publication[]>;

interface Subscriber {
  sink: FeedSink;
  /** Live publications held while the subscriber replays; undefined once live. */
  held: Publication[] | undefined;
}

/** Rows a replay reads from the log at once, at most; pages are sized to REPLAY_PAGE_BYTES. */
const REPLAY_PAGE = 500;
/** The first page, before the session's row size is known. */
const FIRST_REPLAY_PAGE = 16;
const MIN_REPLAY_PAGE = 4;
/**
 * What one page of a replay may weigh, encoded: a stalled subscriber holds its page while it
 * waits, so this (not the row count) bounds what a replaying subscriber costs. 500 rows of a
 * session with 50 KB replies held 25 MB each (found by the review probe: 20 stalled readers of
 * such a session took the daemon from 80 MB to 1 GB).
 */
const REPLAY_PAGE_BYTES = 1024 * 1024;
/** Bytes a replay hands over between waits for the socket to take them. */
const REPLAY_BATCH_BYTES = 256 * 1024;
/** Live publications a replaying subscriber may hold before it is closed. */
const MAX_HELD = 20_000;

export function rowPublication(row: CommittedRow): Publication {
  return { type: "row", row };
}

export function framePublication(frame: LiveFrame): Publication {
  return { type: "frame", frame };
}

export class SessionFeed {
  readonly #key: SessionKey;
  readonly #log: EventLog;
  readonly #subscribers = new Set<Subscriber>();
  readonly #queue: Step[] = [];
  #draining = false;
  #publishedHead: number;

  constructor(key: SessionKey, log: EventLog, head: number) {
    this.#key = key;
    this.#log = log;
    this.#publishedHead = head;
  }

  get subscriberCount(): number {
    return this.#subscribers.size;
  }

  /** Highest seq handed to subscribers. */
  get publishedHead(): number {
    return this.#publishedHead;
  }

  /** Publish a step after every step enqueued before it. A rejected step publishes nothing. */
  enqueue(step: Step): void {
    if (!this.#draining && this.#queue.length === 0 && Array.isArray(step)) {
      this.#publish(step);
      return;
    }
    this.#queue.push(step);
    if (!this.#draining) void this.#drain();
  }

  frame(frame: LiveFrame): void {
    this.enqueue([framePublication(frame)]);
  }

  /**
   * Attach a sink: every row with seq > since is replayed, then live publications follow (all of
   * them: a cursor past the head means "live only", D32), each
   * exactly once and in order.
   */
  subscribe(sink: FeedSink, since: number): Subscription {
    const subscriber: Subscriber = { sink, held: [] };
    const upto = this.#publishedHead;
    this.#subscribers.add(subscriber);
    const replayed = this.#replay(subscriber, since, upto);
    return { replayed, unsubscribe: () => this.#subscribers.delete(subscriber) };
  }

  /** Close every subscriber (session deleted or evicted, daemon stopping). */
  closeAll(reason: string): void {
    for (const subscriber of this.#subscribers) subscriber.sink.close(reason);
    this.#subscribers.clear();
  }

  async #drain(): Promise<void> {
    this.#draining = true;
    while (this.#queue.length > 0) {
      const step = this.#queue.shift() as Step;
      try {
        this.#publish(await step);
      } catch {
        // The step's owner handles its failure; nothing of it is published.
      }
    }
    this.#draining = false;
  }

  #publish(publications: readonly Publication[]): void {
    for (const publication of publications) {
      if (publication.type === "row") this.#publishedHead = Math.max(this.#publishedHead, publication.row.seq);
      for (const subscriber of this.#subscribers) this.#deliver(subscriber, publication);
    }
  }

  #deliver(subscriber: Subscriber, publication: Publication): void {
    if (subscriber.held) {
      subscriber.held.push(publication);
      if (subscriber.held.length > MAX_HELD) this.#drop(subscriber, "subscriber fell behind during replay");
      return;
    }
    if (!subscriber.sink.deliver(publication)) this.#subscribers.delete(subscriber);
  }

  #drop(subscriber: Subscriber, reason: string): void {
    this.#subscribers.delete(subscriber);
    subscriber.sink.close(reason);
  }

  async #replay(subscriber: Subscriber, since: number, upto: number): Promise<void> {
    const sink = subscriber.sink;
    let cursor = Math.max(0, since);
    let pageSize = FIRST_REPLAY_PAGE;
    try {
      while (cursor < upto && !sink.closed) {
        const rows = await this.#log.read(this.#key, cursor, pageSize, upto);
        if (rows.length === 0) break;
        const batch = Math.max(1, sink.replayBatch);
        const pageStart = sink.bytesDelivered;
        let batchStart = pageStart;
        let batchRows = 0;
        for (let i = 0; i < rows.length; i++) {
          if (!sink.deliver(rowPublication(rows[i] as CommittedRow)))
            return this.#drop(subscriber, "subscriber buffer overflow");
          batchRows++;
          const full = batchRows >= batch || sink.bytesDelivered - batchStart >= REPLAY_BATCH_BYTES;
          if (full && i + 1 < rows.length) {
            await sink.whenWritable();
            batchStart = sink.bytesDelivered;
            batchRows = 0;
          }
        }
        cursor = rows[rows.length - 1]?.seq ?? upto;
        pageSize = nextPageSize(rows.length, sink.bytesDelivered - pageStart);
        await sink.whenWritable();
      }
    } catch (error) {
      return this.#drop(subscriber, `replay failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    const held = subscriber.held ?? [];
    subscriber.held = undefined;
    for (const publication of held) {
      if (!this.#subscribers.has(subscriber)) return;
      this.#deliver(subscriber, publication);
    }
  }
}

/** The next replay page: as many rows as fit REPLAY_PAGE_BYTES at this page's mean row size. */
export function nextPageSize(rows: number, bytes: number): number {
  if (rows <= 0 || bytes <= 0) return REPLAY_PAGE;
  const fit = Math.floor(REPLAY_PAGE_BYTES / (bytes / rows));
  return Math.min(REPLAY_PAGE, Math.max(MIN_REPLAY_PAGE, fit));
}
