/**
 * SessionJournal: headers from the session's clock, rows published in commit order on the
 * session's feed, and publication in enqueue order (D9, D30): a frame published after an append
 * goes out after that append's rows, even while the commit is still pending.
 */
import { expect, test } from "bun:test";
import type { EventLog } from "../../../src/core/event-log.ts";
import type { AuditEvent, CommittedRow, LiveFrame, Publication, SessionEvent } from "../../../src/core/events.ts";
import type { FeedSink } from "../../../src/runtime/session-feed.ts";
import { SessionFeed } from "../../../src/runtime/session-feed.ts";
import { SessionJournal } from "../../../src/runtime/session-journal.ts";

const KEY = { app: "spar", id: "s1" };

/** A log whose commits resolve (or fail) when the test says so; rows are numbered from 1 in call order, as group commit does. */
function manualLog() {
  const commits: { events: readonly SessionEvent[]; drained: readonly string[] | undefined }[] = [];
  const waiting: { resolve: () => void; reject: (error: Error) => void }[] = [];
  let head = 0;
  const log: EventLog = {
    append(_key, events, options) {
      commits.push({ events, drained: options?.drainedPromptIds });
      const rows = events.map((event) => ({ seq: ++head, event }));
      return new Promise<CommittedRow[]>((resolve, reject) => {
        waiting.push({ resolve: () => resolve(rows), reject });
      });
    },
    read: async () => [],
    head: async () => head,
  };
  return { log, commits, waiting };
}

/** A subscriber that records every publication as a short label. */
function recordingSink(published: string[]): FeedSink {
  return {
    deliver(publication: Publication) {
      published.push(publication.type === "row" ? `row ${publication.row.seq}` : `frame ${label(publication.frame)}`);
      return true;
    },
    whenWritable: () => Promise.resolve(),
    replayBatch: 100,
    bytesDelivered: 0,
    closed: false,
    close() {},
  };
}

function label(frame: LiveFrame): string {
  return frame.type === "wake" ? frame.at : frame.type;
}

function journal(log: EventLog, now = () => new Date("2026-01-02T03:04:05.678Z")) {
  const feed = new SessionFeed(KEY, log, 0);
  const published: string[] = [];
  feed.subscribe(recordingSink(published), 0);
  return { journal: new SessionJournal({ key: KEY, log, feed, clock: { now } }), published };
}

function audit(header: ReturnType<SessionJournal["header"]>): AuditEvent {
  return { ...header, kind: "audit", name: "test", metadata: {} };
}

const flush = () => new Promise((resolve) => setTimeout(resolve, 0));

test("a header carries a fresh UUIDv7 id, the session clock's time, the invocation and the author", () => {
  const { journal: j } = journal(manualLog().log);
  const first = j.header("e-1", "attach/interrupt");
  const second = j.header("e-1", "attach/interrupt");
  expect(first).toEqual({
    id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
    ts: "2026-01-02T03:04:05.678Z",
    invocationId: "e-1",
    author: "attach/interrupt",
  });
  expect(second.id).not.toBe(first.id);
  expect(Object.keys(first)).toEqual(["id", "ts", "invocationId", "author"]);
});

test("an append's frames and rows go out after what was published before it and before what follows, once committed", async () => {
  const { log, commits, waiting } = manualLog();
  const { journal: j, published } = journal(log);
  j.frame({ type: "wake", at: "first" });
  const appended = j.append(
    [audit(j.header("e-1", "a")), audit(j.header("e-1", "a"))],
    ["p1", "p2"],
    [{ type: "wake", at: "before-rows" }],
  );
  j.frame({ type: "wake", at: "after" });
  await flush();
  // The commit is pending: nothing enqueued after it may overtake it.
  expect(published).toEqual(["frame first"]);
  expect(commits[0]?.drained).toEqual(["p1", "p2"]);
  waiting[0]?.resolve();
  await appended;
  await flush();
  expect(published).toEqual(["frame first", "frame before-rows", "row 1", "row 2", "frame after"]);
});

test("appends publish in the order they were made, whatever order their commits resolve in", async () => {
  const { log, waiting } = manualLog();
  const { journal: j, published } = journal(log);
  const first = j.append([audit(j.header("e-1", "a"))]);
  const second = j.append([audit(j.header("e-1", "a"))]);
  waiting[1]?.resolve();
  await second;
  await flush();
  expect(published).toEqual([]);
  waiting[0]?.resolve();
  await first;
  await flush();
  expect(published).toEqual(["row 1", "row 2"]);
});

test("a refused append rejects and publishes nothing of itself; what follows it still goes out", async () => {
  const { log, waiting } = manualLog();
  const { journal: j, published } = journal(log);
  const refused = j.append([audit(j.header("e-1", "a"))], [], [{ type: "wake", at: "never" }]);
  j.frame({ type: "wake", at: "after" });
  waiting[0]?.reject(new Error("disk full"));
  await expect(refused).rejects.toThrow("disk full");
  await flush();
  expect(published).toEqual(["frame after"]);
});
