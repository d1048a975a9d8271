/**
 * Taking a session over from a dead daemon, whatever touches it first (D532): when the first
 * thing to reach the session after its daemon died is a request on another daemon (here an event
 * stream, which takes the session's free lease), that daemon continues the turn the death cut, as
 * the takeover sweep would have. The lease is long (30 s), so the sweep (every 10 s) is not what
 * continues it. Real daemons, a real PostgreSQL 15.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { SessionEvent } from "../../../src/core/events.ts";
import { startReplica, storedRows } from "../../support/agent-replicas.ts";
import { rows, say, slow } from "../../support/auto-continue-harness.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { type Daemon, postJson, waitFor } from "../../support/daemon.ts";
import { type PostgresCluster, startPostgresCluster } from "../../support/postgres-cluster.ts";
import { collect } from "../../support/sse-client.ts";

const scope = daemonScope();
let cluster: PostgresCluster;

beforeAll(() => {
  cluster = startPostgresCluster("spar");
});
afterAll(() => cluster?.stop());

function agent(url: string, script: unknown[]): Promise<Daemon> {
  return startReplica(scope, url, { script, lease: "30s" });
}

test("a stream opened on another daemon right after the serving daemon died takes the session over and the cut turn is continued there", async () => {
  const url = cluster.createDatabase("replicas_touch_takeover");
  const owner = await agent(url, [slow("never delivered", 60_000)]);
  const other = await agent(url, [say("continued on the other daemon")]);
  expect((await postJson(`${owner.baseUrl}/sessions`, { sessionID: "work" })).status).toBe(201);
  expect((await postJson(`${owner.baseUrl}/sessions/work/inject`, { message: "do the work" })).status).toBe(200);
  await waitFor(
    async () => ((await storedRows(url, "work")).length === 1 ? true : undefined),
    10_000,
    "the turn's user row",
  );
  await owner.kill9();
  // The dead daemon's liveness lock is gone: the stream's daemon takes the lease at once.
  const stream = scope.defer(collect(`${other.baseUrl}/sessions/work/events`), (events) => events.close());
  await waitFor(
    () =>
      rows(stream).some((row) => row.Content?.parts[0]?.text === "continued on the other daemon") ? true : undefined,
    8_000,
    "the cut turn continued on the other daemon",
  );
  const stored = (await storedRows(url, "work")).map((row) => row.event as SessionEvent & { author?: string });
  expect(stored.map((event) => event.author)).toEqual(["user", "agent/auto-continue", "spar"]);
}, 60_000);
