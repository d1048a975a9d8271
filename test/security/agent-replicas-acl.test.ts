/**
 * ACL changes across several `spar agent` daemons on one PostgreSQL database (D487, D528): an ACL
 * PATCHed on a daemon that does not serve the session binds at once on the daemon that does (its
 * live copy of the session may not go on admitting a caller the owner removed), and a later PATCH
 * on the serving daemon merges with the stored ACL, not with its stale copy (no lost update that
 * would give a removed caller its rights back). Real daemons, a real PostgreSQL 15.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { daemonScope } from "../support/daemon-scope.ts";
import type { Daemon } from "../support/daemon.ts";
import { type PostgresCluster, startPostgresCluster } from "../support/postgres-cluster.ts";
import { type CallerName, tenantDaemonArgs, tenantHeaders } from "../support/tenant-daemon.ts";

const scope = daemonScope();
let cluster: PostgresCluster;

beforeAll(() => {
  cluster = startPostgresCluster("spar");
});
afterAll(() => cluster?.stop());

async function gated(url: string): Promise<Daemon> {
  const { args, env } = tenantDaemonArgs();
  return await scope.start({
    sessionDb: url,
    env,
    args: [...args, "--session-db-driver=postgres", "--session-db-lease=3s"],
  });
}

function send(daemon: Daemon, as: CallerName, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${daemon.baseUrl}${path}`, {
    method,
    headers: tenantHeaders({ as }),
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

test("an ACL changed on another daemon binds at once on the daemon serving the session, and is not undone by its next PATCH", async () => {
  const url = cluster.createDatabase("replicas_acl");
  const serving = await gated(url);
  const other = await gated(url);
  const created = await send(serving, "alice", "POST", "/sessions", {
    sessionID: "shared",
    viewers: ["vic"],
    contributors: ["carol"],
  });
  expect(created.status).toBe(201);
  // The serving daemon has the session live: vic reads it, carol writes to it.
  expect((await send(serving, "vic", "GET", "/sessions/shared/status")).status).toBe(200);
  expect((await send(serving, "carol", "POST", "/sessions/shared/inject", { message: "hi", wake: false })).status).toBe(
    200,
  );

  // The owner removes both on the other daemon.
  const patched = await send(other, "alice", "PATCH", "/sessions/shared/acl", { viewers: [], contributors: [] });
  expect(patched.status).toBe(200);

  // The serving daemon refuses them from now on (the masked 404 of a session they may not see).
  expect((await send(serving, "vic", "GET", "/sessions/shared/status")).status).toBe(404);
  expect((await send(serving, "carol", "GET", "/sessions/shared/status")).status).toBe(404);
  const write = await send(serving, "carol", "POST", "/sessions/shared/inject", { message: "again", wake: false });
  expect(write.status).toBe(404);

  // A PATCH on the serving daemon adds bob; vic and carol stay removed.
  const added = await send(serving, "alice", "PATCH", "/sessions/shared/acl", { viewers: ["bob"] });
  expect(added.status).toBe(200);
  expect(await added.json()).toEqual({ owner: "alice", viewers: ["bob"], contributors: [] });
  const acl = await send(other, "alice", "GET", "/sessions/shared/acl");
  expect(await acl.json()).toEqual({ owner: "alice", viewers: ["bob"], contributors: [] });
  expect((await send(other, "vic", "GET", "/sessions/shared/status")).status).toBe(404);
}, 60_000);
