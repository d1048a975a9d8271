/**
 * Several `spar agent` daemons on one PostgreSQL 15 database through the faults of issue 34 item 4
 * (D487-D490, D525-D534), real processes over real sockets:
 * - a network partition between one daemon and the database (a TCP proxy that stops delivering
 *   both ways and keeps the sockets open): the partitioned daemon stops serving its session (turn
 *   cancelled, stream hung up, a log line) before its lease lapses; another daemon takes the
 *   session over after the lease and continues the cut turn; healed, the partitioned daemon's late
 *   writes are refused: one writer, contiguous seqs, nothing of its after the takeover;
 * - a rolling restart: SIGTERM of the daemon serving a session mid-turn; another continues the cut
 *   turn once and a subscriber on a third sees it; a quiet session is served by whoever is asked;
 * - PostgreSQL stopped for 10 s and started again under injects spread over three daemons: nothing
 *   accepted is lost or doubled, seqs contiguous, every daemon healthy and serving again, and
 *   subscribers that were hung up resume with Last-Event-ID and see every row once.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { CommittedRow, SessionEvent } from "../../../src/core/events.ts";
import { PostgresStore } from "../../../src/store/postgres/postgres-store.ts";
import { agentSeqs } from "../../support/agent-durability.ts";
import { rows, say, slow } from "../../support/auto-continue-harness.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { type Daemon, postJson, waitFor } from "../../support/daemon.ts";
import { type PostgresCluster, startPostgresCluster } from "../../support/postgres-cluster.ts";
import { writeScript } from "../../support/scripted.ts";
import { type Collector, collect } from "../../support/sse-client.ts";
import { startTcpProxy } from "../../support/tcp-proxy.ts";

const scope = daemonScope();
let cluster: PostgresCluster;

beforeAll(() => {
  cluster = startPostgresCluster("spar");
});
afterAll(() => cluster?.stop());

const LEASE = "--session-db-lease=3s";

function agent(url: string, script: unknown[], extra: string[] = []): Promise<Daemon> {
  return scope.start({
    sessionDb: url,
    args: [
      "--session-db-driver=postgres",
      "--multi-session",
      LEASE,
      "--model=scripted",
      `--script=${writeScript(script)}`,
      "--auto-continue-backoff=50ms",
      ...extra,
    ],
  });
}

async function storedRows(url: string, id: string): Promise<CommittedRow[]> {
  const store = await PostgresStore.open(url, { writerLock: false });
  try {
    return await store.read({ app: "spar", id }, 0, 100_000);
  } finally {
    await store.close();
  }
}

function follow(daemon: Daemon, id: string): Collector {
  return scope.defer(collect(`${daemon.baseUrl}/sessions/${id}/events`), (stream) => stream.close());
}

/** An event stream read raw (no reconnect): resolves `ended` when the daemon hangs it up. */
function rawStream(daemon: Daemon, id: string): { ended: Promise<number>; text: () => string } {
  const abort = new AbortController();
  scope.defer(abort, (controller) => controller.abort());
  let text = "";
  const ended = (async () => {
    const response = await fetch(`${daemon.baseUrl}/sessions/${id}/events`, { signal: abort.signal });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return performance.now();
      text += decoder.decode(value, { stream: true });
    }
  })().catch(() => 0);
  return { ended, text: () => text };
}

/** A row as `author: text`, an auto-continue prompt by its tag alone. */
function summary(row: CommittedRow): string {
  const event = row.event as SessionEvent & { author?: string; text?: string };
  const text = event.text ?? event.kind;
  return `${event.author}: ${text.startsWith("[auto-continue]") ? "[auto-continue]" : text}`;
}

test("a partition between a daemon and the database: it stops serving before its lease lapses, another takes the session over, its late writes are refused", async () => {
  const url = cluster.createDatabase("replicas_partition");
  const proxy = await startTcpProxy("127.0.0.1", cluster.port);
  scope.defer(proxy, (p) => p.close());
  const viaProxy = url.replace(`:${cluster.port}/`, `:${proxy.port}/`);
  const a = await agent(viaProxy, [slow("from A, never delivered", 600)]);
  const b = await agent(url, [say("continued by B"), say("answered after the heal")]);
  expect((await postJson(`${a.baseUrl}/sessions`, { sessionID: "work" })).status).toBe(201);
  const watcher = follow(b, "work");
  await watcher.waitFor((frame) => frame.event === "capabilities");
  const onA = rawStream(a, "work");
  expect((await postJson(`${a.baseUrl}/sessions/work/inject`, { message: "do the work" })).status).toBe(200);
  await watcher.waitFor((frame) => frame.event === "agent" && rows(watcher).some((row) => row.Author === "user"));

  // Cut at A's next append (its answer's row): the session row is locked, the rows' INSERT held.
  proxy.partitionOn("from A, never delivered");
  await waitFor(() => (proxy.partitioned ? true : undefined), 10_000, "A's append cut");
  const partitionedAt = performance.now();
  // Both watched in one loop: when A hung its stream up, and when B's log first says it took over.
  let takenAt = 0;
  let aEndedAt = 0;
  void onA.ended.then((at) => {
    aEndedAt = at;
  });
  await waitFor(
    () => {
      if (takenAt === 0 && b.log().includes("session spar/work: taken over")) takenAt = performance.now();
      return takenAt > 0 && aEndedAt > 0 ? true : undefined;
    },
    20_000,
    "A hung up and B took over",
  );
  // A let go of the session (within two thirds of the 3 s lease) before B could take it (at 3 s).
  expect(aEndedAt).toBeLessThan(takenAt);
  expect(aEndedAt - partitionedAt).toBeLessThan(3_000);
  expect(takenAt - partitionedAt).toBeGreaterThanOrEqual(2_000);
  expect(a.log()).toContain("session spar/work: no longer served here: its lease could not be renewed");

  await waitFor(
    () => (rows(watcher).some((row) => row.Content?.parts[0]?.text === "continued by B") ? true : undefined),
    20_000,
    "B's continuation on the watcher's stream",
  );
  proxy.heal();
  // Healed: A is healthy again, and whatever A still had to write reached the database and was refused.
  await waitFor(
    async () => ((await fetch(`${a.baseUrl}/healthz`)).status === 200 ? true : undefined),
    20_000,
    "A healthy",
  );
  const inject = await postJson(`${a.baseUrl}/sessions/work/inject`, { message: "after the heal" });
  // Sent to A, relayed to B, which serves the session now.
  expect(inject.status).toBe(200);

  await waitFor(
    async () => ((await storedRows(url, "work")).length >= 5 ? true : undefined),
    20_000,
    "the answer to the relayed message",
  );
  // One writer: A's cut append (its answer) never landed, before or after the heal; everything
  // after the user's first message is B's, once; the seqs are contiguous.
  const stored = await storedRows(url, "work");
  expect(stored.map((row) => row.seq)).toEqual([1, 2, 3, 4, 5]);
  expect(stored.map(summary)).toEqual([
    "user: do the work",
    "agent/auto-continue: [auto-continue]",
    "spar: continued by B",
    "user: after the heal",
    "spar: answered after the heal",
  ]);
  await waitFor(() => (agentSeqs(watcher.frames).length === 5 ? true : undefined), 10_000, "the watcher at the head");
  expect(agentSeqs(watcher.frames)).toEqual([1, 2, 3, 4, 5]);
}, 90_000);
