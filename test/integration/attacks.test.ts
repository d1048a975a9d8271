/**
 * Bad input and attacks, table-driven, against one daemon with every gate on (transport token,
 * token table with a proxy and an admin, peer hub): wrong and missing tokens, right token in the
 * wrong header, assertions from non-proxies, cross-origin and null origins, missing content
 * types, oversized and malformed bodies, hostile ids, another caller's sessions (indistinguishable
 * from missing ones), an expired peer lease. Each case checks its status, no case answers 500,
 * and the daemon serves the next request.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "../../src/surfaces/http/caller-auth.ts";
import { type Daemon, startDaemon, tempDir } from "../support/daemon.ts";

const T = "transport-token";
const tok = { alice: "tok-alice", bob: "tok-bob", gw: "tok-gateway", root: "tok-root" };
let daemon: Daemon;

beforeAll(async () => {
  const dir = tempDir();
  writeFileSync(join(dir, "callers.json"), JSON.stringify({ callers: Object.entries(tok).map(([identity, token]) => ({ identity, token_sha256: sha256Hex(token) })) }));
  writeFileSync(join(dir, "config.json"), JSON.stringify({ attach: { multi_session: { auth: { admin_identities: ["root"], proxy_identities: ["gw"] } } } }));
  daemon = await startDaemon({
    args: ["--multi-session", `--auth-table=${join(dir, "callers.json")}`, `--config=${join(dir, "config.json")}`, "--attach-token=SPAR_T", "--attach-peer-hub"],
    env: { SPAR_T: T },
  });
  expect((await send({ method: "POST", path: "/sessions", as: "alice", body: { sessionID: "alices" } })).status).toBe(201);
  expect((await send({ method: "POST", path: "/peers", as: "alice", body: { name: "shortlived", endpoint: "https://p.example", heartbeat_ttl_sec: 1 } })).status).toBe(201);
});
afterAll(async () => {
  await daemon.sigterm();
});

interface Case {
  name: string;
  method?: string;
  path: string;
  as?: keyof typeof tok | "none";
  headers?: Record<string, string>;
  body?: unknown;
  raw?: string;
  contentType?: string | null;
  expect: number;
}

async function send(c: Omit<Case, "name" | "expect">): Promise<Response> {
  const headers: Record<string, string> = { "x-attach-token": T };
  if (c.as && c.as !== "none") headers.authorization = `Bearer ${tok[c.as]}`;
  if (c.contentType !== null) headers["content-type"] = c.contentType ?? "application/json";
  const body = c.raw ?? (c.body === undefined ? undefined : JSON.stringify(c.body));
  const abort = new AbortController();
  const response = await fetch(`${daemon.baseUrl}${c.path}`, { method: c.method ?? "GET", headers: { ...headers, ...c.headers }, signal: abort.signal, ...(body === undefined ? {} : { body }) });
  return response;
}

const long = "x".repeat(10_000);
const ids = ["..", "%2e%2e", "a%2Fb", "%00", "%E2%80%AE", encodeURIComponent("😀"), long, "a b", "default%00"];
const cases: Case[] = [
  // transport token
  { name: "no transport token", path: "/sessions", as: "alice", headers: { "x-attach-token": "" }, expect: 401 },
  { name: "wrong transport token", path: "/sessions", as: "alice", headers: { "x-attach-token": "nope" }, expect: 401 },
  { name: "transport token as bearer while caller bearer missing", path: "/whoami", headers: { "x-attach-token": "", authorization: `Bearer ${T}` }, expect: 401 },
  { name: "caller token in X-Attach-Token", path: "/sessions", headers: { "x-attach-token": tok.alice }, expect: 401 },
  { name: "lower-case bearer scheme works", path: "/whoami", headers: { authorization: `bearer ${tok.alice}` }, expect: 200 },
  { name: "unknown caller token", path: "/whoami", headers: { authorization: "Bearer forged" }, expect: 401 },
  { name: "no caller token", path: "/sessions", as: "none", expect: 401 },
  { name: "basic auth scheme", path: "/sessions", headers: { authorization: `Basic ${tok.alice}` }, expect: 401 },
  { name: "10 KB token", path: "/sessions", headers: { authorization: `Bearer ${long}` }, expect: 401 },
  // assertions
  { name: "assertion from a non-proxy", path: "/whoami", as: "alice", headers: { "x-asserted-caller": "root" }, expect: 401 },
  { name: "assertion from admin who is no proxy", path: "/whoami", as: "root", headers: { "x-asserted-caller": "alice" }, expect: 401 },
  { name: "empty assertion from the proxy", path: "/whoami", as: "gw", headers: { "x-asserted-caller": " " }, expect: 401 },
  { name: "proxy asserting alice reads her session", path: "/sessions/alices/status", as: "gw", headers: { "x-asserted-caller": "alice" }, expect: 200 },
  { name: "proxy itself cannot read alice's session", path: "/sessions/alices/status", as: "gw", expect: 404 },
  { name: "assertion without any caller token", path: "/whoami", headers: { "x-asserted-caller": "root" }, as: "none", expect: 401 },
  // CSRF
  { name: "cross-origin write", method: "POST", path: "/sessions/alices/inject", as: "alice", headers: { origin: "https://evil.example" }, body: { message: "x" }, expect: 403 },
  { name: "null origin write", method: "POST", path: "/sessions/alices/inject", as: "alice", headers: { origin: "null" }, body: { message: "x" }, expect: 403 },
  { name: "malformed origin", method: "POST", path: "/sessions/alices/inject", as: "alice", headers: { origin: "::::" }, body: { message: "x" }, expect: 403 },
  { name: "origin lookalike of localhost", method: "POST", path: "/sessions/alices/inject", as: "alice", headers: { origin: "http://localhost.evil.example" }, body: { message: "x" }, expect: 403 },
  { name: "loopback origin passes", method: "POST", path: "/sessions/alices/inject", as: "alice", headers: { origin: "http://127.0.0.1:1" }, body: { message: "ok" }, expect: 200 },
  { name: "write without content type", method: "POST", path: "/sessions/alices/inject", as: "alice", contentType: null, raw: '{"message":"x"}', expect: 415 },
  { name: "write as text/plain", method: "POST", path: "/sessions/alices/inject", as: "alice", contentType: "text/plain", raw: '{"message":"x"}', expect: 415 },
  { name: "body-less write without content type", method: "POST", path: "/sessions/alices/wake", as: "alice", contentType: null, expect: 415 },
  { name: "delete without content type", method: "DELETE", path: "/sessions/alices", as: "alice", contentType: null, expect: 415 },
  { name: "form content type", method: "POST", path: "/sessions", as: "alice", contentType: "application/x-www-form-urlencoded", raw: "a=b", expect: 415 },
  // bodies
  { name: "inject over 8 KiB", method: "POST", path: "/sessions/alices/inject", as: "alice", body: { message: "y".repeat(9000) }, expect: 413 },
  { name: "malformed JSON", method: "POST", path: "/sessions/alices/inject", as: "alice", raw: "{", expect: 400 },
  { name: "JSON array body", method: "POST", path: "/sessions/alices/inject", as: "alice", body: ["x"], expect: 400 },
  { name: "message null", method: "POST", path: "/sessions/alices/inject", as: "alice", body: { message: null }, expect: 400 },
  { name: "message object", method: "POST", path: "/sessions/alices/inject", as: "alice", body: { message: { a: 1 } }, expect: 400 },
  { name: "message empty", method: "POST", path: "/sessions/alices/inject", as: "alice", body: { message: "" }, expect: 400 },
  { name: "message NUL only", method: "POST", path: "/sessions/alices/inject", as: "alice", body: { message: "\u0000" }, expect: 200 },
  { name: "deeply nested body", method: "POST", path: "/sessions/alices/inject", as: "alice", raw: "[".repeat(3000) + "]".repeat(3000), expect: 400 },
  { name: "create with owner field", method: "POST", path: "/sessions", as: "alice", body: { owner: "alice" }, expect: 400 },
  { name: "create with viewers not a list", method: "POST", path: "/sessions", as: "alice", body: { viewers: "bob" }, expect: 400 },
  { name: "create with a slash id", method: "POST", path: "/sessions", as: "alice", body: { sessionID: "a/b" }, expect: 400 },
  { name: "create with a dot-dot id", method: "POST", path: "/sessions", as: "alice", body: { sessionID: ".." }, expect: 400 },
  { name: "create with a 10 KB id", method: "POST", path: "/sessions", as: "alice", body: { sessionID: long }, expect: 413 },
  { name: "create with an id another caller's invisible session holds (masked as missing)", method: "POST", path: "/sessions", as: "bob", body: { sessionID: "alices" }, expect: 404 },
  { name: "create with an id of one's own session", method: "POST", path: "/sessions", as: "alice", body: { sessionID: "alices" }, expect: 409 },
  { name: "wake with a target", method: "POST", path: "/sessions/alices/wake", as: "alice", body: { target: "x" }, expect: 501 },
  { name: "events with a bad since", path: "/sessions/alices/events?since=-1", as: "alice", expect: 400 },
  { name: "events with major 2", path: "/sessions/alices/events?protocol=2.0", as: "alice", expect: 409 },
  // another caller's sessions look missing
  { name: "bob reads alice's status", path: "/sessions/alices/status", as: "bob", expect: 404 },
  { name: "bob reads alice's events", path: "/sessions/spar/alices/events", as: "bob", expect: 404 },
  { name: "bob injects into alice's session", method: "POST", path: "/sessions/alices/inject", as: "bob", body: { message: "x" }, expect: 404 },
  { name: "bob deletes alice's session", method: "DELETE", path: "/sessions/alices", as: "bob", expect: 404 },
  { name: "bob reads alice's acl", path: "/sessions/alices/acl", as: "bob", expect: 404 },
  { name: "bob reads the default session", path: "/sessions/default/usage", as: "bob", expect: 404 },
  { name: "admin reads alice's acl", path: "/sessions/alices/acl", as: "root", expect: 200 },
  // hostile ids
  ...ids.map((id): Case => ({ name: `status of id ${decodeURIComponent(id).slice(0, 12)}`, path: `/sessions/${id}/status`, as: "alice", expect: 404 })),
  ...ids.slice(0, 4).map((id): Case => ({ name: `inject into id ${decodeURIComponent(id).slice(0, 12)}`, method: "POST", path: `/sessions/${id}/inject`, as: "alice", body: { message: "x" }, expect: 404 })),
  // peers
  { name: "peer with a relative endpoint", method: "POST", path: "/peers", as: "alice", body: { name: "p", endpoint: "/x" }, expect: 400 },
  { name: "peer with an ftp endpoint", method: "POST", path: "/peers", as: "alice", body: { name: "p", endpoint: "ftp://x" }, expect: 400 },
  { name: "peer body over 16 KiB", method: "POST", path: "/peers", as: "alice", body: { name: "p", endpoint: "https://x", labels: { a: "z".repeat(17_000) } }, expect: 413 },
  { name: "peer list without caller", path: "/peers", as: "none", expect: 401 },
  { name: "peer list with a malformed filter", path: "/peers?label=novalue", as: "alice", expect: 400 },
  { name: "heartbeat of an unknown peer", method: "POST", path: "/peers/peer-0000/heartbeat", as: "alice", expect: 404 },
  { name: "delete of an unknown peer", method: "DELETE", path: "/peers/peer-0000", as: "alice", expect: 204 },
  // paths and methods
  { name: "unknown path", path: "/admin", as: "alice", expect: 404 },
  { name: "trailing slash on healthz", path: "/healthz/", as: "none", headers: { "x-attach-token": "" }, expect: 401 },
  { name: "PUT on inject", method: "PUT", path: "/sessions/alices/inject", as: "alice", expect: 405 },
  { name: "healthz without any token", path: "/healthz", headers: { "x-attach-token": "" }, as: "none", expect: 200 },
];

test(`${cases.length} bad and hostile requests get their status, never a 500, and the daemon keeps serving`, async () => {
  expect(cases.length).toBeGreaterThanOrEqual(60);
  const failures: string[] = [];
  for (const c of cases) {
    const response = await send(c);
    if (response.headers.get("content-type") !== "text/event-stream") await response.arrayBuffer();
    if (response.status !== c.expect) failures.push(`${c.name}: expected ${c.expect}, got ${response.status}`);
    if (response.status === 500) failures.push(`${c.name}: 500`);
    const health = await fetch(`${daemon.baseUrl}/healthz`);
    if (health.status !== 200) failures.push(`${c.name}: daemon unhealthy after it (${health.status})`);
  }
  expect(failures).toEqual([]);
});

test("an expired peer lease is gone from the list", async () => {
  await Bun.sleep(1200);
  const listed = (await (await send({ path: "/peers", as: "alice" })).json()) as { peers: Array<{ name: string; registration_id?: string }> };
  expect(listed.peers.map((peer) => peer.name)).not.toContain("shortlived");
});
