/**
 * Resource exhaustion through the peer hub (issue 13 item 7): one caller registered 2,000 peers
 * with 11 KB labels and one-year leases, the state file was rewritten whole on every change and
 * the daemon's memory grew fivefold. Each test is an attack and its refusal: a caller past its
 * cap, the hub past its total cap, a one-year lease, oversized labels, names and endpoints, the
 * 2,000-registration flood itself; and a kill -9 restart reloading the journal exactly. The
 * daemon runs with a caller table (alice, bob, carol; root an admin) and small caps.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "../../src/surfaces/http/caller-auth.ts";
import { type Daemon, startDaemon, tempDir } from "../support/daemon.ts";

const tokens = { alice: "tok-alice", bob: "tok-bob", carol: "tok-carol", dave: "tok-dave", root: "tok-root" };
type Who = keyof typeof tokens;
let dir: string;
let stateFile: string;
let daemon: Daemon;

async function startHub(extra: string[] = [], sessionDb?: string): Promise<Daemon> {
  return startDaemon({
    args: [
      "--multi-session",
      `--auth-table=${join(dir, "callers.json")}`,
      `--config=${join(dir, "config.json")}`,
      "--attach-peer-hub",
      `--attach-peer-state-file=${stateFile}`,
      ...extra,
    ],
    ...(sessionDb ? { sessionDb } : {}),
  });
}

beforeAll(async () => {
  dir = tempDir("spar-peers-exhaustion-");
  stateFile = join(dir, "state", "peers.jsonl");
  writeFileSync(
    join(dir, "callers.json"),
    JSON.stringify({
      callers: Object.entries(tokens).map(([identity, token]) => ({ identity, token_sha256: sha256Hex(token) })),
    }),
  );
  writeFileSync(
    join(dir, "config.json"),
    JSON.stringify({ attach: { multi_session: { auth: { admin_identities: ["root"] } }, peer_max_total: 6 } }),
  );
  daemon = await startHub(["--attach-peer-max-per-caller=3"]);
});
afterAll(async () => {
  await daemon.sigterm();
});

function send(method: string, path: string, as: Who, body?: unknown, target: Daemon = daemon): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Bearer ${tokens[as]}` };
  if (method !== "GET") headers["content-type"] = "application/json";
  return fetch(`${target.baseUrl}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

const register = (as: Who, name: string, extra: Record<string, unknown> = {}, target: Daemon = daemon) =>
  send("POST", "/peers", as, { name, endpoint: `https://${name}.example`, heartbeat_ttl_sec: 600, ...extra }, target);

async function names(target: Daemon = daemon): Promise<string[]> {
  const listed = (await (await send("GET", "/peers", "root", undefined, target)).json()) as {
    peers: Array<{ name: string }>;
  };
  return listed.peers.map((peer) => peer.name);
}

interface CapBody {
  error: string;
  cap: string;
  limit: number;
  retry_after_seconds: number;
}

test("a caller past its registration cap is refused 429 with Retry-After and a body naming the cap; nothing is stored", async () => {
  for (const name of ["a1", "a2", "a3"]) expect((await register("alice", name)).status).toBe(201);
  const before = await names();
  const refused = await register("alice", "a4");
  expect(refused.status).toBe(429);
  const body = (await refused.json()) as CapBody;
  expect(body).toMatchObject({ cap: "registrations_per_caller", limit: 3 });
  expect(body.error).toContain("registrations_per_caller = 3");
  expect(body.retry_after_seconds).toBeGreaterThan(590);
  expect(body.retry_after_seconds).toBeLessThanOrEqual(600);
  expect(refused.headers.get("retry-after")).toBe(String(body.retry_after_seconds));
  expect(await names()).toEqual(before);
  // At the cap, re-registering a name the caller holds still works (it adds nothing).
  expect((await register("alice", "a2", { labels: { v: "2" } })).status).toBe(201);
  // Deregistering frees a place.
  const a1 = (await (await send("GET", "/peers", "alice")).json()) as {
    peers: Array<{ name: string; registration_id: string }>;
  };
  const id = a1.peers.find((peer) => peer.name === "a1")?.registration_id;
  expect((await send("DELETE", `/peers/${id}`, "alice")).status).toBe(204);
  expect((await register("alice", "a4")).status).toBe(201);
});

test("the hub past its total cap refuses any caller 429 naming registrations_total", async () => {
  for (const name of ["b1", "b2", "b3"]) expect((await register("bob", name)).status).toBe(201);
  expect((await names()).length).toBe(6);
  const refused = await register("carol", "c1");
  expect(refused.status).toBe(429);
  expect(await refused.json()).toMatchObject({ cap: "registrations_total", limit: 6 });
  expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
  expect(await names()).not.toContain("c1");
});

test("a one-year lease is not granted: it is cut to the hub's maximum (1h by default), heartbeats included", async () => {
  const id = (
    (await (await send("GET", "/peers", "alice")).json()) as { peers: Array<{ name: string; registration_id: string }> }
  ).peers.find((peer) => peer.name === "a2")?.registration_id;
  const started = Date.now();
  const renewed = await register("alice", "a2", { heartbeat_ttl_sec: 365 * 24 * 3600 });
  expect(renewed.status).toBe(201);
  const view = (await renewed.json()) as { heartbeat_ttl_sec: number; expires_at: string };
  expect(view.heartbeat_ttl_sec).toBe(3600);
  expect(Date.parse(view.expires_at) - started).toBeLessThanOrEqual(3600_000 + 1000);
  const beat = (await (await send("POST", `/peers/${id}/heartbeat`, "alice")).json()) as {
    heartbeat_ttl_sec: number;
    expires_at: string;
  };
  expect(beat.heartbeat_ttl_sec).toBe(3600);
  expect(Date.parse(beat.expires_at) - started).toBeLessThanOrEqual(3600_000 + 2000);
});

test("oversized labels, too many labels, long keys, names and endpoints are refused 400 naming the field", async () => {
  const before = await names();
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ labels: { note: "x".repeat(11_000) } }, "labels.note: a value must be at most 256 characters"],
    [{ labels: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"])) }, "labels: at most 16 labels"],
    [{ labels: { ["k".repeat(65)]: "v" } }, "labels: a key must be 1 to 64 characters"],
    [{ labels: { "": "v" } }, "labels: a key must be 1 to 64 characters"],
    [{ endpoint: `https://e.example/${"p".repeat(2048)}` }, "endpoint must be at most 2048 characters"],
  ];
  for (const [extra, message] of cases) {
    const refused = await register("dave", "d1", extra);
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: string }).error).toBe(message);
  }
  const longName = await register("dave", "n".repeat(129));
  expect(longName.status).toBe(400);
  expect(((await longName.json()) as { error: string }).error).toBe("name must be at most 128 characters");
  expect(await names()).toEqual(before);
});

test("2,000 registrations from one caller: 64 stored, the rest refused 429, the state files stay small", async () => {
  // A separate hub with the default caps and its own state file.
  const floodDir = tempDir("spar-peers-flood-");
  const floodState = join(floodDir, "peers.jsonl");
  const hub = await startDaemon({
    args: [
      "--multi-session",
      `--auth-table=${join(dir, "callers.json")}`,
      "--attach-peer-hub",
      `--attach-peer-state-file=${floodState}`,
    ],
  });
  try {
    const labels = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`label${i}`, "v".repeat(200)]));
    const statuses = new Map<number, number>();
    const started = performance.now();
    for (let index = 0; index < 2000; index++) {
      const response = await register("carol", `flood-${index}`, { labels, heartbeat_ttl_sec: 365 * 24 * 3600 }, hub);
      await response.arrayBuffer();
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
    }
    expect(Object.fromEntries(statuses)).toEqual({ 201: 64, 429: 1936 });
    expect(performance.now() - started).toBeLessThan(25_000);
    const bytes = readdirSync(floodDir).reduce((sum, name) => sum + statSync(join(floodDir, name)).size, 0);
    expect(bytes).toBeLessThan(64 * 4 * 1024);
    expect((await names(hub)).length).toBe(64);
  } finally {
    await hub.sigterm();
  }
}, 30_000);

test("a restart after kill -9 reloads the journal exactly: ids, labels, owners and leases", async () => {
  const listing = async (target: Daemon) =>
    (await (await send("GET", "/peers", "root", undefined, target)).json()) as { peers: unknown[] };
  const id = (
    (await (await send("GET", "/peers", "bob")).json()) as { peers: Array<{ name: string; registration_id: string }> }
  ).peers.find((peer) => peer.name === "b1")?.registration_id;
  expect((await send("POST", `/peers/${id}/heartbeat`, "bob")).status).toBe(200);
  const b2 = (
    (await (await send("GET", "/peers", "bob")).json()) as { peers: Array<{ name: string; registration_id: string }> }
  ).peers.find((peer) => peer.name === "b2")?.registration_id;
  expect((await send("DELETE", `/peers/${b2}`, "bob")).status).toBe(204);
  expect((await register("bob", "b3", { labels: { zone: "eu-west", tier: "gold" } })).status).toBe(201);
  const before = await listing(daemon);
  await daemon.kill9();
  daemon = await startHub(["--attach-peer-max-per-caller=3"], daemon.sessionDb);
  expect(await listing(daemon)).toEqual(before);
  // Ownership came back too: bob's peer is still bob's, not alice's.
  const b1 = await send("POST", `/peers/${id}/heartbeat`, "alice");
  expect(b1.status).toBe(404);
  expect((await send("POST", `/peers/${id}/heartbeat`, "bob")).status).toBe(200);
}, 30_000);
