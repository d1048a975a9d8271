/**
 * FollowerFeeds (D488, D531) on an in-process log whose head read the test holds: a row announced
 * while the first subscriber's feed is being opened (its head read still on its way) reaches that
 * subscriber, rather than waiting for the session's next announcement.
 */
import { expect, test } from "bun:test";
import type { EventLog } from "../../../src/core/event-log.ts";
import type { CommittedRow, Publication, SessionEvent } from "../../../src/core/events.ts";
import type { SessionKey } from "../../../src/core/session-key.ts";
import { FollowerFeeds } from "../../../src/runtime/follower-feeds.ts";
import type { FeedSink } from "../../../src/runtime/session-feed.ts";
import { waitFor } from "../../support/daemon.ts";

const key: SessionKey = { app: "a", id: "s1" };

function row(seq: number): CommittedRow {
  return { seq, event: { kind: "user-message", text: `m${seq}` } as unknown as SessionEvent };
}

/** A log of `rows`; head() answers the value it had when asked, once the test releases it. */
class HeldLog implements EventLog {
  rows: CommittedRow[] = [];
  #release: () => void = () => {};
  readonly asked: Promise<void>;
  #asked: () => void = () => {};
  constructor() {
    this.asked = new Promise((resolve) => (this.#asked = resolve));
  }
  async append(): Promise<CommittedRow[]> {
    throw new Error("not used");
  }
  async read(_key: SessionKey, after: number, limit: number, upto?: number): Promise<CommittedRow[]> {
    return this.rows.filter((r) => r.seq > after && (upto === undefined || r.seq <= upto)).slice(0, limit);
  }
  head(): Promise<number> {
    const head = this.rows.length;
    this.#asked();
    return new Promise((resolve) => (this.#release = () => resolve(head)));
  }
  releaseHead(): void {
    this.#release();
  }
}

class Sink implements FeedSink {
  readonly seqs: number[] = [];
  closed = false;
  readonly replayBatch = 100;
  bytesDelivered = 0;
  deliver(publication: Publication): boolean {
    if (publication.type === "row") this.seqs.push(publication.row.seq);
    return true;
  }
  async whenWritable(): Promise<void> {}
  close(): void {
    this.closed = true;
  }
}

test("a row announced while the feed's head is being read reaches the first subscriber", async () => {
  const log = new HeldLog();
  log.rows = [row(1), row(2)];
  const feeds = new FollowerFeeds(log);
  const sink = new Sink();
  const subscribing = feeds.subscribe(key, sink, 0);
  await log.asked;
  // Row 3 commits after the head was read (2), and its announcement arrives before that answer.
  log.rows.push(row(3));
  feeds.advance(key, 3);
  log.releaseHead();
  await (await subscribing).replayed;
  await waitFor(() => (sink.seqs.length === 3 ? true : undefined), 2_000, "row 3 delivered");
  expect(sink.seqs).toEqual([1, 2, 3]);
});
