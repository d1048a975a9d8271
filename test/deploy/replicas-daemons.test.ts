/**
 * The three replicas deploy/overlays/replicas renders, run: three `spar agent` processes, each on
 * its own copy of the rendered pod (config file, caller table, arguments, environment), on one
 * real PostgreSQL 15 that demands a password, which reaches each only as PGPASSWORD from Secret
 * spar-agent-db, the URL from ConfigMap spar-agent-store carrying none. A session opened on one
 * replica, a message injected on another (relayed to the first, D489) and a stream on the third
 * (a follower feed, D488) showing the turn's rows, the rows the database holds (D535).
 * Overrides, each named where made: listeners on port 0, the provider's base URL (a local stand-in
 * answering as Anthropic does, the key still MODEL_API_KEY from its Secret), the tool server's
 * port (nothing listens there: the agent retries a server it cannot reach) and the database's
 * address in the store's ConfigMap.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SQL } from "bun";
import type { CommittedRow } from "../../src/core/events.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { type ProviderFake, startProviderFake } from "../fakes/providers/provider-fake.ts";
import type { Row } from "../support/auto-continue-harness.ts";
import { daemonScope } from "../support/daemon-scope.ts";
import { agentSeqs } from "../support/agent-durability.ts";
import { type Daemon, postJson, tempDir, waitFor } from "../support/daemon.ts";
import {
  DEPLOY_DIR,
  type KubeObject,
  SECRET_FIXTURES,
  containerOnDisk,
  freeLoopbackPort,
  generatedConfigMap,
  renderKustomization,
} from "../support/deploy-manifests.ts";
import { type PostgresCluster, startPostgresCluster } from "../support/postgres-cluster.ts";
import { collect } from "../support/sse-client.ts";

const PASSWORD = "agent-db-password-value";
const ONCALL = { authorization: `Bearer ${SECRET_FIXTURES["spar-tokens"].oncall}` };

const scope = daemonScope();
let cluster: PostgresCluster;
let model: ProviderFake;

beforeAll(() => {
  cluster = startPostgresCluster("spar", { password: PASSWORD });
  model = startProviderFake("anthropic", { apiKey: SECRET_FIXTURES["spar-model"]["api-key"] });
  model.always("text");
});
afterAll(() => {
  model?.stop();
  cluster?.stop();
});

/** The rendered set with the store's ConfigMap pointing at this machine's database (no password in it either). */
function renderedFor(url: string): KubeObject[] {
  const objects = renderKustomization(join(DEPLOY_DIR, "overlays", "replicas")).objects;
  const store = generatedConfigMap(objects, "spar-agent-store").data as Record<string, string>;
  expect(new URL(store["session-db-url"] ?? "").password).toBe("");
  store["session-db-url"] = url;
  return objects;
}

/** One replica: its own pod's files, arguments and environment; the provider's stand-in. */
async function replica(objects: KubeObject[]): Promise<Daemon> {
  const secrets = { ...SECRET_FIXTURES, "spar-agent-db": { password: PASSWORD } };
  const { args, env, workingDir, mounted } = containerOnDisk(objects, "spar-agent", "agent", tempDir(), secrets);
  // The catalog names the tool server on the pod's loopback, port 8080: here a port nothing holds.
  const catalog = mounted.onDisk("/etc/spar/config/mcp.json");
  const text = readFileSync(catalog, "utf8");
  expect(text).toContain("http://127.0.0.1:8080/mcp");
  writeFileSync(catalog, text.replace("http://127.0.0.1:8080/mcp", `http://127.0.0.1:${freeLoopbackPort()}/mcp`));
  expect(args.join(" ")).not.toContain(PASSWORD);
  expect(env.PGPASSWORD).toBe(PASSWORD);
  // startDaemon adds --attach-listen=127.0.0.1:0 (the flag wins over the config's 0.0.0.0:7777);
  // the store is the rendered arguments' own, so no --session-db.
  return await scope.start({
    sessionDb: null,
    args: [...args.slice(1), `--model-base-url=${model.baseUrl}`],
    cwd: workingDir,
    env,
  });
}

async function storedRows(id: string): Promise<CommittedRow[]> {
  const url = cluster.url.replace("postgres@", `postgres:${PASSWORD}@`);
  const store = await PostgresStore.open(url, { writerLock: false });
  try {
    return await store.read({ app: "triage", id }, 0, 10_000);
  } finally {
    await store.close();
  }
}

test("three replicas on the rendered files: a session opened on one, an inject on another, the turn's rows streamed on the third", async () => {
  const objects = renderedFor(cluster.url);
  // One after another: the first creates the schema.
  const replicas: Daemon[] = [];
  for (let index = 0; index < 3; index++) replicas.push(await replica(objects));
  const [first, second, third] = replicas as [Daemon, Daemon, Daemon];
  for (const daemon of replicas) {
    expect((await fetch(`${daemon.baseUrl}/healthz`)).status).toBe(200);
    expect(daemon.log()).toMatch(/postgres:\/\/\*\*\*@127\.0\.0\.1:\d+\/spar/);
    expect(daemon.log()).not.toContain(PASSWORD);
  }

  const created = await postJson(`${first.baseUrl}/sessions`, {}, ONCALL);
  expect(created.status).toBe(201);
  const { sessionID } = (await created.json()) as { sessionID: string };
  const stream = scope.defer(collect(`${third.baseUrl}/sessions/${sessionID}/events`, { headers: ONCALL }), (feed) =>
    feed.close(),
  );
  await stream.waitFor((frame) => frame.event === "capabilities");

  const injected = await postJson(
    `${second.baseUrl}/sessions/${sessionID}/inject`,
    { message: "hello, replicas" },
    ONCALL,
  );
  expect(injected.status).toBe(200);
  const author = (frame: { data: Record<string, unknown> }) => (frame.data.event as Row).Author;
  await stream.waitFor((frame) => frame.event === "agent" && author(frame) === "user", 20_000);
  const reply = await stream.waitFor((frame) => frame.event === "agent" && author(frame) !== "user", 20_000);
  expect(JSON.stringify((reply.data.event as Row).Content)).toContain("text");
  // The turn went to the provider the config names, with the model it names.
  expect(model.requests.at(-1)?.body).toMatchObject({ model: "claude-sonnet-4-5" });

  // The stream on the third replica holds every row the database holds, once and in order.
  const stored = await waitFor(
    async () => {
      const seqs = (await storedRows(sessionID)).map((row) => row.seq);
      return seqs.length >= 2 && agentSeqs(stream.frames).join() === seqs.join() ? seqs : undefined;
    },
    10_000,
    "the stream at the log's head",
  );
  expect(agentSeqs(stream.frames)).toEqual(stored);

  // The first replica, which opened the session, serves it: its lease names that process.
  const sql = new SQL(cluster.url.replace("postgres@", `postgres:${PASSWORD}@`));
  try {
    const holders: { holder: string }[] = await sql`SELECT l.holder FROM spar_session_leases l
      JOIN spar_sessions s ON s.pk = l.session_pk WHERE s.sid = ${sessionID}`;
    expect(holders.map(({ holder }) => holder.split(":")[1])).toEqual([String(first.process.pid)]);
  } finally {
    await sql.close();
  }
  for (const daemon of replicas) expect(await daemon.sigterm()).toBe(0);
}, 90_000);
