/**
 * The peer hub over HTTP, in-process (app.handle, no port): every status of the four routes, the
 * 16 KiB cap, endpoint validation, label filters, the 401 for anonymous callers under
 * multi-session auth, the state file and its journal (0600, every change on disk at once, reload
 * honoring leases and ownership, malformed lines skipped with a warning, unreadable file and
 * unwritable directory refused), the prune timer, and the flag combination check.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Caller } from "../../../src/surfaces/http/caller-auth.ts";
import { guardedApp } from "../../../src/surfaces/http/guarded-app.ts";
import { PeerHub } from "../../../src/surfaces/peers/peer-hub.ts";
import { journalPathOf, readPeerState } from "../../../src/surfaces/peers/peer-journal.ts";
import { PEER_FLAGS, resolvePeerSettings } from "../../../src/surfaces/peers/peer-flags.ts";
import { PEER_BODY_LIMIT, peerRoutes } from "../../../src/surfaces/peers/peer-routes.ts";
import { tempDir, waitFor } from "../../support/daemon.ts";

/** `x-test-caller: <identity>` (plus `x-test-admin: 1`) names the caller; no header is anonymous. */
function callerFromHeader(request: Request): Caller {
  const identity = request.headers.get("x-test-caller");
  if (identity === null) return { identity: "local", admin: false, source: "anonymous" };
  return { identity, admin: request.headers.get("x-test-admin") === "1", source: "bearer" };
}

interface Logged {
  info: string[];
  warn: string[];
  error: string[];
}

function recorder(): Logged & { log: { info(m: string): void; warn(m: string): void; error(m: string): void } } {
  const logged: Logged = { info: [], warn: [], error: [] };
  return {
    ...logged,
    log: { info: (m) => logged.info.push(m), warn: (m) => logged.warn.push(m), error: (m) => logged.error.push(m) },
  };
}

interface Harness {
  app: { handle(request: Request): Promise<Response> };
  hub: PeerHub;
  clock: { now: number };
  logged: Logged;
}

function harness(options: { requireIdentity?: boolean; stateFile?: string; now?: number } = {}): Harness {
  const clock = { now: options.now ?? Date.parse("2030-01-01T00:00:00Z") };
  const logged = recorder();
  const opened = PeerHub.open({ stateFile: options.stateFile, log: logged.log, now: () => clock.now });
  if (!opened.ok) throw new Error(opened.error);
  const app = guardedApp({
    transport: { token: undefined, readonly: false },
    resolveCaller: callerFromHeader,
    publicPaths: new Set(),
    bodyLimit: () => PEER_BODY_LIMIT,
  }).use(peerRoutes(opened.value, { requireIdentity: options.requireIdentity ?? false }));
  return { app, hub: opened.value, clock, logged };
}

type As = string | { identity: string; admin: true } | undefined;

function headersFor(as: As, write: boolean): Record<string, string> {
  const headers: Record<string, string> = write ? { "content-type": "application/json" } : {};
  if (typeof as === "string") headers["x-test-caller"] = as;
  else if (as !== undefined) Object.assign(headers, { "x-test-caller": as.identity, "x-test-admin": "1" });
  return headers;
}

async function call(
  h: Harness,
  method: string,
  path: string,
  as: As,
  body?: unknown,
): Promise<{ status: number; body: any; headers: Headers }> {
  const write = method !== "GET";
  const init: RequestInit = { method, headers: headersFor(as, write) };
  if (body !== undefined) init.body = typeof body === "string" ? body : JSON.stringify(body);
  const response = await h.app.handle(new Request(`http://spar.test${path}`, init));
  const text = await response.text();
  return { status: response.status, body: text === "" ? undefined : JSON.parse(text), headers: response.headers };
}

const registration = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  endpoint: `http://${name}.test:9000`,
  ...extra,
});

describe("POST /peers", () => {
  test("201 with the registration; the owner is never on the wire", async () => {
    const h = harness();
    const created = await call(
      h,
      "POST",
      "/peers",
      "alice",
      registration("a", { labels: { env: "prod" }, heartbeat_ttl_sec: 60, extra: "ignored" }),
    );
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      registration_id: expect.stringMatching(/^peer-[0-9a-f]{32}$/),
      name: "a",
      endpoint: "http://a.test:9000",
      labels: { env: "prod" },
      heartbeat_ttl_sec: 60,
      expires_at: new Date(h.clock.now + 60_000).toISOString(),
    });
    expect(JSON.stringify(created.body)).not.toContain("alice");
  });

  test("upsert by name: the owner keeps the id; another caller gets 409; an admin takes over", async () => {
    const h = harness();
    const first = await call(h, "POST", "/peers", "alice", registration("a"));
    const again = await call(h, "POST", "/peers", "alice", registration("a", { endpoint: "https://moved.test" }));
    expect(again.status).toBe(201);
    expect(again.body.registration_id).toBe(first.body.registration_id);
    expect(again.body.endpoint).toBe("https://moved.test");
    const stolen = await call(h, "POST", "/peers", "bob", registration("a"));
    expect(stolen.status).toBe(409);
    expect(stolen.body.error).toContain("another caller");
    const admin = await call(h, "POST", "/peers", { identity: "root", admin: true }, registration("a"));
    expect(admin.status).toBe(201);
    expect(admin.body.registration_id).not.toBe(first.body.registration_id);
  });

  test("400 for bad endpoints, naming the field", async () => {
    const h = harness();
    for (const endpoint of [
      "/relative/path",
      "peer.test:80",
      "ftp://peer.test",
      "http://",
      "http:peer.test",
      "http:///x",
      42,
      null,
      ["http://a.test"],
    ]) {
      const response = await call(h, "POST", "/peers", "alice", { name: "a", endpoint });
      expect(response.status, JSON.stringify(endpoint)).toBe(400);
      expect(response.body.error).toContain("endpoint");
    }
    const missing = await call(h, "POST", "/peers", "alice", { name: "a" });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toContain("endpoint");
    expect((await call(h, "GET", "/peers", "alice")).body.peers).toEqual([]);
  });

  test("400 for an empty or missing name, bad labels, a bad TTL, an empty or malformed body", async () => {
    const h = harness();
    const cases: [unknown, string][] = [
      [{ name: "", endpoint: "http://a.test" }, "name"],
      [{ name: "   ", endpoint: "http://a.test" }, "name"],
      [{ endpoint: "http://a.test" }, "name"],
      [registration("a", { labels: { env: 1 } }), "labels"],
      [registration("a", { labels: ["x"] }), "labels"],
      [registration("a", { heartbeat_ttl_sec: 0 }), "heartbeat_ttl_sec"],
      [registration("a", { heartbeat_ttl_sec: -5 }), "heartbeat_ttl_sec"],
      [registration("a", { heartbeat_ttl_sec: "30" }), "heartbeat_ttl_sec"],
      ["", "empty"],
      ["{not json", "malformed JSON"],
      ["[1,2]", "invalid request body"],
    ];
    for (const [body, mention] of cases) {
      const response = await call(h, "POST", "/peers", "alice", body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.error).toContain(mention);
    }
  });

  test("16 KiB cap: a 12 KiB body is accepted, anything over 16 KiB is a 413", async () => {
    const h = harness();
    // Unknown fields are ignored, so they make the size without tripping the label limits.
    const fits = await call(h, "POST", "/peers", "alice", { ...registration("a"), note: "x".repeat(12 * 1024) });
    expect(fits.status).toBe(201);
    const over = await call(
      h,
      "POST",
      "/peers",
      "alice",
      registration("b", { labels: { note: "x".repeat(16 * 1024) } }),
    );
    expect(over.status).toBe(413);
    expect((await call(h, "GET", "/peers", "alice")).body.peers.map((p: { name: string }) => p.name)).toEqual(["a"]);
  });

  test("a write without application/json is a 415 (RouteTable's guard applies)", async () => {
    const h = harness();
    const response = await h.app.handle(
      new Request("http://spar.test/peers", { method: "POST", body: JSON.stringify(registration("a")) }),
    );
    expect(response.status).toBe(415);
  });
});

describe("GET /peers", () => {
  test("label filters (repeatable, all must match) and registration_id only for owner or admin", async () => {
    const h = harness();
    await call(h, "POST", "/peers", "alice", registration("db1", { labels: { env: "prod", role: "db" } }));
    await call(h, "POST", "/peers", "alice", registration("web1", { labels: { env: "prod", role: "web" } }));
    await call(h, "POST", "/peers", "bob", registration("dev1", { labels: { env: "dev", role: "db" } }));
    const names = async (query: string) =>
      (await call(h, "GET", `/peers${query}`, "alice")).body.peers.map((p: { name: string }) => p.name);
    expect(await names("")).toEqual(["db1", "dev1", "web1"]);
    expect(await names("?label=env=prod")).toEqual(["db1", "web1"]);
    expect(await names("?label=env=prod&label=role=db")).toEqual(["db1"]);
    expect(await names("?label=role%3Ddb")).toEqual(["db1", "dev1"]);
    expect(await names("?label=zone=eu")).toEqual([]);
    expect(await names("?other=1")).toEqual(["db1", "dev1", "web1"]);

    const asAlice = (await call(h, "GET", "/peers", "alice")).body.peers as Record<string, unknown>[];
    expect(asAlice.map((p) => "registration_id" in p)).toEqual([true, false, true]);
    const asAdmin = (await call(h, "GET", "/peers", { identity: "root", admin: true })).body.peers as Record<
      string,
      unknown
    >[];
    expect(asAdmin.every((p) => typeof p.registration_id === "string")).toBe(true);
    const asCarol = (await call(h, "GET", "/peers", "carol")).body.peers as Record<string, unknown>[];
    expect(asCarol.some((p) => "registration_id" in p)).toBe(false);
    expect(JSON.stringify(asAdmin)).not.toMatch(/alice|bob/);
  });

  test("400 on a malformed label filter", async () => {
    const h = harness();
    for (const query of ["?label=env", "?label==prod", "?label=", "?label=env=prod&label=bad"]) {
      const response = await call(h, "GET", `/peers${query}`, "alice");
      expect(response.status, query).toBe(400);
      expect(response.body.error).toContain("label filter");
    }
  });

  test("lapsed leases are not listed", async () => {
    const h = harness();
    await call(h, "POST", "/peers", "alice", registration("a", { heartbeat_ttl_sec: 5 }));
    h.clock.now += 5000;
    expect((await call(h, "GET", "/peers", "alice")).body).toEqual({ peers: [] });
  });
});

describe("POST /peers/{id}/heartbeat", () => {
  test("200 with the extended lease; 404 for unknown, lapsed or someone else's id", async () => {
    const h = harness();
    const created = (await call(h, "POST", "/peers", "alice", registration("a", { heartbeat_ttl_sec: 10 }))).body;
    h.clock.now += 8000;
    const renewed = await call(h, "POST", `/peers/${created.registration_id}/heartbeat`, "alice");
    expect(renewed.status).toBe(200);
    expect(renewed.body).toEqual({ ...created, expires_at: new Date(h.clock.now + 10_000).toISOString() });
    expect((await call(h, "POST", "/peers/peer-unknown/heartbeat", "alice")).status).toBe(404);
    expect((await call(h, "POST", `/peers/${created.registration_id}/heartbeat`, "bob")).status).toBe(404);
    h.clock.now += 10_000;
    const lapsed = await call(h, "POST", `/peers/${created.registration_id}/heartbeat`, "alice");
    expect(lapsed.status).toBe(404);
    expect(lapsed.body.error).toContain("no peer registration");
  });
});

describe("DELETE /peers/{id}", () => {
  test("204 for the owner and an admin; 403 for anyone else; 204 on an unknown id", async () => {
    const h = harness();
    const a = (await call(h, "POST", "/peers", "alice", registration("a"))).body;
    const b = (await call(h, "POST", "/peers", "alice", registration("b"))).body;
    const forbidden = await call(h, "DELETE", `/peers/${a.registration_id}`, "bob");
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error).toContain("owner or an admin");
    const removed = await call(h, "DELETE", `/peers/${a.registration_id}`, "alice");
    expect(removed.status).toBe(204);
    expect(removed.body).toBeUndefined();
    expect((await call(h, "DELETE", `/peers/${a.registration_id}`, "alice")).status).toBe(204);
    expect((await call(h, "DELETE", "/peers/never-was", "bob")).status).toBe(204);
    expect((await call(h, "DELETE", `/peers/${b.registration_id}`, { identity: "root", admin: true })).status).toBe(
      204,
    );
    expect((await call(h, "GET", "/peers", "alice")).body).toEqual({ peers: [] });
  });
});

describe("identity", () => {
  test("with requireIdentity every peer route answers 401 to an anonymous caller", async () => {
    const h = harness({ requireIdentity: true });
    const created = (await call(h, "POST", "/peers", "alice", registration("a"))).body;
    const anonymous = [
      await call(h, "POST", "/peers", undefined, registration("b")),
      await call(h, "GET", "/peers", undefined),
      await call(h, "POST", `/peers/${created.registration_id}/heartbeat`, undefined),
      await call(h, "DELETE", `/peers/${created.registration_id}`, undefined),
    ];
    for (const response of anonymous) {
      expect(response.status).toBe(401);
      expect(response.headers.get("www-authenticate")).toBe('Bearer realm="attach-multisession"');
    }
    expect((await call(h, "GET", "/peers", "alice")).body.peers.map((p: { name: string }) => p.name)).toEqual(["a"]);
  });

  test("without it the single local caller registers, sees its ids and deletes", async () => {
    const h = harness();
    const created = await call(h, "POST", "/peers", undefined, registration("a"));
    expect(created.status).toBe(201);
    expect((await call(h, "GET", "/peers", undefined)).body.peers[0].registration_id).toBe(
      created.body.registration_id,
    );
    expect((await call(h, "DELETE", `/peers/${created.body.registration_id}`, undefined)).status).toBe(204);
  });
});

describe("state file", () => {
  const lines = (path: string) =>
    readFileSync(path, "utf8")
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  const mode = (path: string) => statSync(path).mode & 0o777;

  /** What a restart would load: the snapshot with the journal applied. */
  const state = (path: string) => {
    const read = readPeerState(path);
    if (!read.ok) throw new Error(read.error);
    return read.value.records.sort((x, y) => (x.name < y.name ? -1 : 1)) as unknown as Array<Record<string, unknown>>;
  };

  test("a state file in a directory that does not exist yet is created there (a fresh checkout's .agents/state)", () => {
    const path = join(tempDir(), ".agents", "state", "peers.jsonl");
    harness({ stateFile: path });
    expect(mode(path)).toBe(0o600);
    expect(mode(journalPathOf(path))).toBe(0o600);
    expect(lines(path)).toEqual([]);
  });

  test("every register, heartbeat and deregister is on disk at once (snapshot and journal 0600); a prune writes nothing", async () => {
    const path = join(tempDir(), "peers.jsonl");
    const h = harness({ stateFile: path });
    expect(state(path)).toEqual([]);

    const a = (
      await call(h, "POST", "/peers", "alice", registration("a", { heartbeat_ttl_sec: 100, labels: { env: "prod" } }))
    ).body;
    expect(mode(journalPathOf(path))).toBe(0o600);
    expect(state(path)).toEqual([
      {
        registration_id: a.registration_id,
        name: "a",
        endpoint: "http://a.test:9000",
        labels: { env: "prod" },
        heartbeat_ttl_sec: 100,
        owner: "alice",
        registered_at: new Date(h.clock.now).toISOString(),
        expires_at: a.expires_at,
      },
    ]);
    // Appended, not rewritten: the snapshot still holds what it held at startup.
    expect(lines(path)).toEqual([]);

    await call(h, "POST", "/peers", "bob", registration("b", { heartbeat_ttl_sec: 5 }));
    expect(state(path).map((r) => r.name)).toEqual(["a", "b"]);

    h.clock.now += 1000;
    await call(h, "POST", `/peers/${a.registration_id}/heartbeat`, "alice");
    expect(state(path)[0]?.expires_at).toBe(new Date(h.clock.now + 100_000).toISOString());

    h.clock.now += 5000;
    const journalBytes = readFileSync(journalPathOf(path)).byteLength;
    expect(h.hub.prune()).toBe(1);
    expect(readFileSync(journalPathOf(path)).byteLength).toBe(journalBytes);

    await call(h, "DELETE", `/peers/${a.registration_id}`, "alice");
    // b lapsed: held on disk with its expiry, dropped by the next load.
    expect(state(path).map((r) => r.name)).toEqual(["b"]);
    expect(h.logged.error).toEqual([]);
    const reloaded = harness({ stateFile: path, now: h.clock.now });
    expect(reloaded.hub.list()).toEqual([]);
    expect(lines(path)).toEqual([]);
  });

  test("the journal is compacted into the snapshot once it outgrows it: bytes written stay proportional to the changes", async () => {
    const path = join(tempDir(), "peers.jsonl");
    const h = harness({ stateFile: path });
    const a = (await call(h, "POST", "/peers", "alice", registration("a", { heartbeat_ttl_sec: 3600 }))).body;
    let compactions = 0;
    let last = readFileSync(journalPathOf(path)).byteLength;
    for (let beat = 0; beat < 2000; beat++) {
      h.clock.now += 1000;
      expect((await call(h, "POST", `/peers/${a.registration_id}/heartbeat`, "alice")).status).toBe(200);
      const size = readFileSync(journalPathOf(path)).byteLength;
      if (size < last) compactions++;
      last = size;
      expect(size).toBeLessThan(70 * 1024);
    }
    expect(compactions).toBeGreaterThan(0);
    expect(lines(path).map((r) => r.name)).toEqual(["a"]);
    expect(state(path)[0]?.expires_at).toBe(new Date(h.clock.now + 3_600_000).toISOString());
    expect(mode(path)).toBe(0o600);
  });

  test("reloaded at startup: leases honored (expired dropped), ownership kept", async () => {
    const path = join(tempDir(), "peers.jsonl");
    const first = harness({ stateFile: path });
    const a = (await call(first, "POST", "/peers", "alice", registration("a", { heartbeat_ttl_sec: 300 }))).body;
    await call(first, "POST", "/peers", "bob", registration("b", { heartbeat_ttl_sec: 10 }));
    first.hub.close();

    const second = harness({ stateFile: path, now: first.clock.now + 60_000 });
    expect(second.logged.info.join("\n")).toContain("restored 1 registration(s)");
    expect(second.logged.info.join("\n")).toContain("dropped 1 expired");
    const listed = (await call(second, "GET", "/peers", "alice")).body.peers;
    expect(listed).toEqual([a]);
    expect(lines(path).map((r) => r.name)).toEqual(["a"]);
    expect((await call(second, "POST", "/peers", "bob", registration("a"))).status).toBe(409);
    expect((await call(second, "DELETE", `/peers/${a.registration_id}`, "bob")).status).toBe(403);
    expect((await call(second, "POST", `/peers/${a.registration_id}/heartbeat`, "alice")).status).toBe(200);
    expect((await call(second, "DELETE", `/peers/${a.registration_id}`, "alice")).status).toBe(204);
  });

  test("malformed lines are skipped with a warning that names the line, not its content", async () => {
    const dir = tempDir();
    const path = join(dir, "peers.jsonl");
    const source = harness({ stateFile: path });
    const a = (await call(source, "POST", "/peers", "alice", registration("a", { heartbeat_ttl_sec: 300 }))).body;
    // A restart compacts: the record is now a line of the snapshot.
    harness({ stateFile: path, now: source.clock.now });
    const good = readFileSync(path, "utf8").trim();
    const secretish = { ...JSON.parse(good), registration_id: "peer-secret-one", name: "z", endpoint: "not a url" };
    writeFileSync(
      path,
      [`{"truncated": `, good, "", JSON.stringify({ name: "half" }), JSON.stringify(secretish), "[]", ""].join("\n"),
    );

    const reloaded = harness({ stateFile: path, now: source.clock.now });
    expect(reloaded.logged.warn).toHaveLength(4);
    const warnings = reloaded.logged.warn.join("\n");
    expect(warnings).toContain("line 1");
    expect(warnings).toContain("line 4");
    expect(warnings).toContain("record");
    expect(warnings).not.toContain("peer-secret-one");
    expect(warnings).not.toContain(a.registration_id);
    expect((await call(reloaded, "GET", "/peers", "alice")).body.peers).toEqual([a]);
    expect(lines(path)).toHaveLength(1);
  });

  test("a torn journal line (a crash mid-append) is skipped with a warning; the lines before it count", async () => {
    const path = join(tempDir(), "peers.jsonl");
    const source = harness({ stateFile: path });
    const a = (await call(source, "POST", "/peers", "alice", registration("a", { heartbeat_ttl_sec: 300 }))).body;
    writeFileSync(journalPathOf(path), `${readFileSync(journalPathOf(path), "utf8")}{"op":"put","record":{"name":"b`);
    const reloaded = harness({ stateFile: path, now: source.clock.now });
    expect(reloaded.logged.warn).toEqual([`peer journal ${journalPathOf(path)} line 2 skipped: not JSON`]);
    expect((await call(reloaded, "GET", "/peers", "alice")).body.peers).toEqual([a]);
  });

  test("a missing file is an empty registry; the file is created", () => {
    const path = join(tempDir(), "new.jsonl");
    const h = harness({ stateFile: path });
    expect(h.hub.list()).toEqual([]);
    expect(mode(path)).toBe(0o600);
  });

  test("an unreadable file fails startup: a directory in its place, or a path under a regular file", () => {
    const dir = tempDir();
    const asDirectory = join(dir, "peers.jsonl");
    mkdirSync(asDirectory);
    const regular = join(dir, "plain");
    writeFileSync(regular, "");
    for (const path of [asDirectory, join(regular, "peers.jsonl")]) {
      const opened = PeerHub.open({ stateFile: path, log: recorder().log });
      expect(opened.ok, path).toBe(false);
      if (!opened.ok) expect(opened.error).toContain(`peer state file ${path} cannot be read`);
    }
  });

  test("an unwritable directory fails startup", () => {
    // A missing directory is created (test above); one whose parent is a regular file cannot be.
    const notADirectory = join(tempDir(), "a-file");
    writeFileSync(notADirectory, "");
    const unwritable = [join(notADirectory, "peers.jsonl")];
    if (process.platform === "linux") unwritable.push("/proc/spar-peers.jsonl");
    if (process.getuid?.() !== 0) {
      const locked = tempDir();
      chmodSync(locked, 0o500);
      unwritable.push(join(locked, "peers.jsonl"));
    }
    for (const path of unwritable) {
      const opened = PeerHub.open({ stateFile: path, log: recorder().log });
      expect(opened.ok, path).toBe(false);
      if (!opened.ok) expect(opened.error).toMatch(new RegExp(`^peer state file ${path} cannot be (read|written)`));
    }
  });

  test("a failed write after startup is logged and the change stands in memory", async () => {
    const dir = tempDir();
    const path = join(dir, "sub", "peers.jsonl");
    mkdirSync(join(dir, "sub"));
    const h = harness({ stateFile: path });
    // Replace the directory with a regular file: the next write cannot land.
    rmSync(join(dir, "sub"), { recursive: true });
    writeFileSync(join(dir, "sub"), "");
    expect((await call(h, "POST", "/peers", "alice", registration("a"))).status).toBe(201);
    expect(h.logged.error.join("\n")).toContain("cannot be written");
    expect(h.hub.list().map((r) => r.name)).toEqual(["a"]);
  });
});

describe("prune timer", () => {
  test("prunes lapsed leases on its own and stops on close", async () => {
    const path = join(tempDir(), "peers.jsonl");
    const h = harness({ stateFile: path });
    await call(h, "POST", "/peers", "alice", registration("a", { heartbeat_ttl_sec: 1 }));
    h.hub.startPruning(5);
    h.clock.now += 1000;
    await waitFor(() => (h.hub.held === 0 ? true : undefined), 2000, "the prune");
    expect(h.hub.held).toBe(0);
    h.hub.close();
    await call(h, "POST", "/peers", "alice", registration("b", { heartbeat_ttl_sec: 1 }));
    h.clock.now += 1000;
    // Time under test: eight prune periods pass and nothing is pruned.
    await Bun.sleep(40);
    expect(h.hub.held).toBe(1);
  });
});

describe("flags", () => {
  const flags = (entries: [string, string | boolean][]) => new Map<string, string | boolean | number>(entries);
  const config = (entries: [string, unknown][]) => new Map<string, unknown>(entries);

  const limits = { maxPerCaller: 64, maxTotal: 1024, maxTtlSec: 3600 };

  test("PEER_FLAGS: the hub switch, the state file and the caps with their config keys", () => {
    expect(PEER_FLAGS.map((spec) => [spec.name, spec.kind, spec.configKey])).toEqual([
      ["attach-peer-hub", "bool", "attach.peer_hub"],
      ["attach-peer-state-file", "string", "attach.peer_state_file"],
      ["attach-peer-max-per-caller", "int", "attach.peer_max_per_caller"],
      ["attach-peer-max-total", "int", "attach.peer_max_total"],
      ["attach-peer-max-lease", "duration", "attach.peer_max_lease"],
    ]);
  });

  test("the caps: defaults 64, 1024 and 1h; flags (the lease parsed to ms) win over config keys (Go notation)", () => {
    expect(resolvePeerSettings(flags([]), config([]), "/srv")).toEqual({
      ok: true,
      value: { enabled: false, stateFile: undefined, limits },
    });
    const set = resolvePeerSettings(
      new Map<string, string | boolean | number>([
        ["attach-peer-max-per-caller", 8],
        ["attach-peer-max-lease", 120_000],
      ]),
      config([
        ["attach.peer_max_per_caller", 9],
        ["attach.peer_max_total", 100],
        ["attach.peer_max_lease", "10m"],
      ]),
      "/srv",
    );
    expect(set).toEqual({
      ok: true,
      value: { enabled: false, stateFile: undefined, limits: { maxPerCaller: 8, maxTotal: 100, maxTtlSec: 120 } },
    });
    expect(resolvePeerSettings(flags([]), config([["attach.peer_max_lease", "90s"]]), "/srv")).toEqual({
      ok: true,
      value: { enabled: false, stateFile: undefined, limits: { ...limits, maxTtlSec: 90 } },
    });
  });

  test("caps out of bounds are errors naming the flag or key", () => {
    const cases: Array<[Map<string, string | boolean | number>, Map<string, unknown>, string]> = [
      [
        new Map([["attach-peer-max-per-caller", 0]]),
        config([]),
        "--attach-peer-max-per-caller must be an integer from 1 to 100000",
      ],
      [
        new Map(),
        config([["attach.peer_max_total", 1_000_000]]),
        "config key attach.peer_max_total must be an integer from 1 to 100000",
      ],
      [
        new Map(),
        config([["attach.peer_max_total", "lots"]]),
        "config key attach.peer_max_total must be an integer from 1 to 100000",
      ],
      [new Map([["attach-peer-max-lease", 10]]), config([]), "--attach-peer-max-lease must be at least 1000ms"],
      [new Map(), config([["attach.peer_max_lease", 3600]]), "config key attach.peer_max_lease: not a duration"],
      [
        new Map(),
        config([["attach.peer_max_lease", "900h"]]),
        "config key attach.peer_max_lease must be at most 596h31m24s",
      ],
    ];
    for (const [flagValues, configValues, message] of cases) {
      const resolved = resolvePeerSettings(flagValues, configValues, "/srv");
      expect(resolved.ok ? "" : resolved.error).toStartWith(message);
    }
  });

  test("off by default; flags win over the config file; relative paths from cwd", () => {
    expect(resolvePeerSettings(flags([]), config([]), "/srv")).toEqual({
      ok: true,
      value: { enabled: false, stateFile: undefined, limits },
    });
    expect(resolvePeerSettings(flags([["attach-peer-hub", true]]), config([]), "/srv")).toEqual({
      ok: true,
      value: { enabled: true, stateFile: undefined, limits },
    });
    expect(
      resolvePeerSettings(
        flags([
          ["attach-peer-hub", true],
          ["attach-peer-state-file", "state/peers.jsonl"],
        ]),
        config([["attach.peer_state_file", "/other"]]),
        "/srv",
      ),
    ).toEqual({ ok: true, value: { enabled: true, stateFile: "/srv/state/peers.jsonl", limits } });
    expect(
      resolvePeerSettings(
        flags([]),
        config([
          ["attach.peer_hub", true],
          ["attach.peer_state_file", "/var/peers.jsonl"],
        ]),
        "/srv",
      ),
    ).toEqual({
      ok: true,
      value: { enabled: true, stateFile: "/var/peers.jsonl", limits },
    });
    expect(
      resolvePeerSettings(flags([["attach-peer-hub", false]]), config([["attach.peer_hub", true]]), "/srv"),
    ).toEqual({
      ok: true,
      value: { enabled: false, stateFile: undefined, limits },
    });
  });

  test("the state file without the hub is an error naming where it was set", () => {
    const fromFlag = resolvePeerSettings(flags([["attach-peer-state-file", "p.jsonl"]]), config([]), "/srv");
    expect(fromFlag.ok).toBe(false);
    if (!fromFlag.ok) expect(fromFlag.error).toContain("--attach-peer-state-file needs the peer hub");
    const fromConfig = resolvePeerSettings(
      flags([["attach-peer-hub", false]]),
      config([
        ["attach.peer_state_file", "p.jsonl"],
        ["attach.peer_hub", true],
      ]),
      "/srv",
    );
    expect(fromConfig.ok).toBe(false);
    if (!fromConfig.ok) expect(fromConfig.error).toContain("config key attach.peer_state_file needs the peer hub");
  });

  test("bad config values are errors naming the key", () => {
    const hub = resolvePeerSettings(flags([]), config([["attach.peer_hub", "yes"]]), "/srv");
    expect(hub.ok ? "" : hub.error).toBe("config key attach.peer_hub must be true or false");
    const file = resolvePeerSettings(
      flags([]),
      config([
        ["attach.peer_hub", true],
        ["attach.peer_state_file", ""],
      ]),
      "/srv",
    );
    expect(file.ok ? "" : file.error).toBe("config key attach.peer_state_file must be a non-empty file path");
  });
});
