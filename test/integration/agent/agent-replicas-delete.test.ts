/**
 * A session deleted on one `spar agent` while another serves it (D533), on a real PostgreSQL 15:
 * the serving daemon stops serving it at the next request that reaches it, rather than at its next
 * lease renewal (a third of --session-db-lease): a read answers 404 at once and its event streams
 * there are hung up.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startReplica } from "../../support/agent-replicas.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { type Daemon, postJson } from "../../support/daemon.ts";
import { type PostgresCluster, startPostgresCluster } from "../../support/postgres-cluster.ts";

const scope = daemonScope();
let cluster: PostgresCluster;

beforeAll(() => {
  cluster = startPostgresCluster("spar");
});
afterAll(() => cluster?.stop());

function agent(url: string): Promise<Daemon> {
  // A long lease: its renewal (every 10 s) is not what notices the deletion.
  return startReplica(scope, url, { lease: "30s" });
}

test("a session deleted on another daemon answers 404 at once on the daemon serving it, and its streams there are hung up", async () => {
  const url = cluster.createDatabase("replicas_delete");
  const serving = await agent(url);
  const other = await agent(url);
  expect((await postJson(`${serving.baseUrl}/sessions`, { sessionID: "gone" })).status).toBe(201);
  const abort = scope.defer(new AbortController(), (controller) => controller.abort());
  const stream = await fetch(`${serving.baseUrl}/sessions/gone/events`, { signal: abort.signal });
  expect(stream.status).toBe(200);
  const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
  const ended = (async () => {
    let text = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return text;
      text += new TextDecoder().decode(value);
    }
  })();
  expect((await fetch(`${serving.baseUrl}/sessions/gone/status`)).status).toBe(200);

  expect(
    (
      await fetch(`${other.baseUrl}/sessions/gone`, {
        method: "DELETE",
        headers: { "content-type": "application/json" },
      })
    ).status,
  ).toBe(204);
  const status = await fetch(`${serving.baseUrl}/sessions/gone/status`);
  expect(status.status).toBe(404);
  expect(((await status.json()) as { error: string }).error).toContain("session not found");
  // The stream ends (the daemon hung it up), having carried its opening frames only.
  expect(await ended).toContain("event: capabilities");
}, 60_000);
