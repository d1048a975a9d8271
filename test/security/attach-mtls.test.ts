/**
 * Attacks on the attach listener's mTLS identity (issue 13 item 3). The daemon runs with a client
 * CA, a caller table, `CN=admin` as an admin and `CN=gateway` as a proxy; certificates are made by
 * openssl here, including a rogue CA that signs its own `CN=admin`. Each test is an attack and
 * its refusal: borrowing a verified connection's identity from another loopback address with the
 * same source port (the hole the old loopback splice had), connecting without a certificate or
 * with one from another CA, borrowing the admin's subject by assertion or by sharing the daemon
 * with it, holding connections open without finishing a handshake or a request head, and (on a
 * second daemon) the resource attacks the terminator must bound now that it serves the requests
 * itself: an event stream nobody reads, streams dropped mid-way, an oversized body.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, readdirSync, readlinkSync, writeFileSync } from "node:fs";
import { connect as connectTcp } from "node:net";
import { join } from "node:path";
import { connect as connectTls } from "node:tls";
import { sha256Hex } from "../../src/surfaces/http/caller-auth.ts";
import { type Daemon, startDaemon, tempDir, waitFor } from "../support/daemon.ts";
import { TestCertificates } from "../support/test-certificates.ts";

let dir: string;
let daemon: Daemon;
/** Single-session, with a 64 KiB subscriber byte bound: the stream and body attacks. */
let streams: Daemon;
/** Multi-session with certificates alone (no caller table): the auth block applies (D330). */
let certOnly: Daemon;

function makeCertificates(): void {
  dir = tempDir("spar-mtls-attack-");
  new TestCertificates(dir)
    .ca("ca", "/CN=spar test CA")
    .ca("rogue-ca", "/CN=spar test CA")
    .signed("server", "/CN=localhost", "ca", { server: true })
    .signed("alice", "/CN=alice", "ca")
    .signed("bob", "/CN=bob", "ca")
    .signed("admin", "/CN=admin", "ca")
    .signed("gateway", "/CN=gateway", "ca")
    .signed("rogue-admin", "/CN=admin", "rogue-ca");
}

const pem = (name: string) => readFileSync(join(dir, name), "utf8");
const identity = (name: string) => ({ ca: pem("ca.crt"), cert: pem(`${name}.crt`), key: pem(`${name}.key`) });

beforeAll(async () => {
  makeCertificates();
  writeFileSync(
    join(dir, "callers.json"),
    JSON.stringify({ callers: [{ identity: "carol", token_sha256: sha256Hex("tok-carol") }] }),
  );
  writeFileSync(
    join(dir, "config.json"),
    JSON.stringify({
      attach: { multi_session: { auth: { admin_identities: ["CN=admin"], proxy_identities: ["CN=gateway"] } } },
    }),
  );
  const tls = [
    `--attach-tls-cert=${join(dir, "server.crt")}`,
    `--attach-tls-key=${join(dir, "server.key")}`,
    `--attach-client-ca=${join(dir, "ca.crt")}`,
  ];
  [daemon, streams, certOnly] = await Promise.all([
    startDaemon({
      args: [
        ...tls,
        "--multi-session",
        `--auth-table=${join(dir, "callers.json")}`,
        `--config=${join(dir, "config.json")}`,
        "--attach-peer-hub",
      ],
    }),
    startDaemon({ args: [...tls, "--subscriber-buffer-bytes=65536", `--config=${join(dir, "config.json")}`] }),
    startDaemon({ args: [...tls, "--multi-session", `--config=${join(dir, "config.json")}`] }),
  ]);
});
afterAll(async () => {
  await Promise.all([daemon.sigterm(), streams.sigterm(), certOnly.sigterm()]);
});

interface TcpEntry {
  local: string;
  localPort: number;
  remotePort: number;
  state: string;
  inode: string;
}

/** Every IPv4 and IPv6 TCP socket of the host, from /proc/net. */
function tcpTable(): TcpEntry[] {
  const entries: TcpEntry[] = [];
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of readFileSync(file, "utf8").split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10) continue;
      const [local = "", localPort = "0"] = (fields[1] ?? "").split(":");
      const remotePort = (fields[2] ?? "").split(":")[1] ?? "0";
      entries.push({
        local,
        localPort: Number.parseInt(localPort, 16),
        remotePort: Number.parseInt(remotePort, 16),
        state: fields[3] ?? "",
        inode: fields[9] ?? "",
      });
    }
  }
  return entries;
}

/** The socket inodes the daemon process holds open. */
function socketInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match?.[1]) inodes.add(match[1]);
    } catch {
      // closed meanwhile
    }
  }
  return inodes;
}

const LISTEN = "0A";
const ESTABLISHED = "01";

/** Unix sockets the daemon listens on (flag __SO_ACCEPTCON). */
function listeningUnixSockets(pid: number): string[] {
  const inodes = socketInodes(pid);
  return readFileSync("/proc/net/unix", "utf8")
    .split("\n")
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields[3] === "00010000" && inodes.has(fields[6] ?? ""))
    .map((fields) => fields[7] ?? "(unnamed)");
}

/** Open a TLS connection and keep it: the request's answer, and the socket to close later. */
async function heldConnection(name: string): Promise<{ answer: string; localPort: number; close(): void }> {
  const socket = connectTls({ host: "127.0.0.1", port: daemon.port, servername: "localhost", ...identity(name) });
  await new Promise<void>((resolve, reject) => {
    socket.once("secureConnect", () => resolve());
    socket.once("error", reject);
  });
  let answer = "";
  socket.on("data", (data) => (answer += data));
  socket.write("GET /whoami HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  await waitFor(() => (answer.includes("}") ? true : undefined), 2000, "the whoami answer");
  return { answer, localPort: socket.localPort ?? 0, close: () => socket.destroy() };
}

/** Plain HTTP from 127.0.0.2 with a chosen source port; whatever comes back within a second. */
async function fromOtherLoopback(port: number, sourcePort: number): Promise<string> {
  return new Promise((resolve) => {
    let answer = "";
    const socket = connectTcp({ host: "127.0.0.1", port, localAddress: "127.0.0.2", localPort: sourcePort });
    const done = () => {
      socket.destroy();
      resolve(answer);
    };
    socket.on("connect", () => socket.write("GET /whoami HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"));
    socket.on("data", (data) => (answer += data));
    socket.on("error", (error) => resolve(`error: ${error.message}`));
    socket.on("close", done);
    setTimeout(done, 1000); // deadline: the answer is whatever came in a second
  });
}

async function whoami(name: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${daemon.baseUrl}/whoami`, { headers, tls: identity(name) } as RequestInit);
}

test("no inner endpoint to skip the terminator: the daemon listens on its public TLS port only, on no Unix socket", async () => {
  const admin = await heldConnection("admin");
  try {
    const inodes = socketInodes(daemon.process.pid);
    const listening = tcpTable().filter((entry) => entry.state === LISTEN && inodes.has(entry.inode));
    expect(listening.map((entry) => entry.localPort)).toEqual([daemon.port]);
    expect(listeningUnixSockets(daemon.process.pid)).toEqual([]);
  } finally {
    admin.close();
  }
});

test("a connection from 127.0.0.2 reusing the source port of a verified admin connection is not served as the admin", async () => {
  const admin = await heldConnection("admin");
  try {
    expect(admin.answer).toContain('"identity":"CN=admin","admin":true');
    const inodes = socketInodes(daemon.process.pid);
    const table = tcpTable().filter((entry) => inodes.has(entry.inode));
    // Every port the daemon listens on, and every source port of a connection the daemon holds
    // (the old design's splice to its inner port), plus the admin client's own source port.
    const ports = table.filter((entry) => entry.state === LISTEN).map((entry) => entry.localPort);
    const sources = [
      admin.localPort,
      ...table.filter((entry) => entry.state === ESTABLISHED).map((entry) => entry.localPort),
    ];
    expect(ports.length).toBeGreaterThan(0);
    for (const port of ports) {
      for (const source of new Set(sources)) {
        if (source === port) continue;
        const answer = await fromOtherLoopback(port, source);
        expect(answer).not.toContain("CN=admin");
        expect(answer).not.toMatch(/^HTTP\/1\.1 200/);
      }
    }
  } finally {
    admin.close();
  }
});

test("a client without a certificate is refused at the handshake: no HTTP answer at all", async () => {
  await expect(fetch(`${daemon.baseUrl}/healthz`, { tls: { ca: pem("ca.crt") } } as RequestInit)).rejects.toThrow();
  const answer = await new Promise<string>((resolve) => {
    let received = "";
    const socket = connectTls({ host: "127.0.0.1", port: daemon.port, servername: "localhost", ca: pem("ca.crt") });
    socket.on("secureConnect", () => socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
    socket.on("data", (data) => (received += data));
    socket.on("error", () => resolve(received));
    socket.on("close", () => resolve(received));
  });
  expect(answer).toBe("");
});

test("a certificate from another CA is refused at the handshake, even one with the admin's subject", async () => {
  const rogue = { ca: pem("ca.crt"), cert: pem("rogue-admin.crt"), key: pem("rogue-admin.key") };
  await expect(fetch(`${daemon.baseUrl}/whoami`, { tls: rogue } as RequestInit)).rejects.toThrow();
});

test("plain HTTP to the TLS port is not served", async () => {
  expect(await fromOtherLoopback(daemon.port, 0)).not.toMatch(/^HTTP\/1\.1 [0-9]/);
});

test("an admin subject cannot be borrowed: a non-admin's requests, concurrent with an admin's connection, stay the non-admin's", async () => {
  const admin = await heldConnection("admin");
  try {
    const answers = await Promise.all(
      Array.from({ length: 40 }, () => whoami("alice").then((response) => response.json())),
    );
    for (const answer of answers) expect(answer).toEqual({ identity: "CN=alice", admin: false, source: "mtls" });
  } finally {
    admin.close();
  }
});

test("an admin subject cannot be borrowed by assertion: a certificate that is not a proxy naming CN=admin is refused 401", async () => {
  const response = await whoami("alice", { "x-asserted-caller": "CN=admin" });
  expect(response.status).toBe(401);
  expect(((await response.json()) as { error: string }).error).toContain("only from a proxy identity");
});

test("an admin subject cannot be borrowed by a bearer token: a table caller stays itself on a certificate connection", async () => {
  const response = await whoami("alice", { authorization: "Bearer tok-carol" });
  expect(await response.json()).toEqual({ identity: "carol", admin: false, source: "bearer" });
});

test("a peer registered over one certificate cannot be managed over another: its owner is the certificate subject", async () => {
  const write = (name: string, method: string, path: string, body?: unknown) =>
    fetch(`${daemon.baseUrl}${path}`, {
      method,
      headers: { "content-type": "application/json" },
      tls: identity(name),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    } as RequestInit);
  const registered = await write("alice", "POST", "/peers", { name: "alices-peer", endpoint: "https://alice.example" });
  expect(registered.status).toBe(201);
  const { registration_id: id } = (await registered.json()) as { registration_id: string };
  expect((await write("bob", "POST", `/peers/${id}/heartbeat`)).status).toBe(404);
  expect((await write("bob", "DELETE", `/peers/${id}`)).status).toBe(403);
  expect((await write("bob", "POST", "/peers", { name: "alices-peer", endpoint: "https://bob.example" })).status).toBe(
    409,
  );
  const seenByBob = (await (
    await fetch(`${daemon.baseUrl}/peers`, { tls: identity("bob") } as RequestInit)
  ).json()) as { peers: Array<Record<string, unknown>> };
  expect(seenByBob.peers.find((peer) => peer.name === "alices-peer")?.registration_id).toBeUndefined();
  expect((await write("alice", "DELETE", `/peers/${id}`)).status).toBe(204);
});

test("requests pipelined on one verified connection are all that connection's subject", async () => {
  const socket = connectTls({ host: "127.0.0.1", port: daemon.port, servername: "localhost", ...identity("alice") });
  await new Promise<void>((resolve) => socket.once("secureConnect", () => resolve()));
  let answer = "";
  socket.on("data", (data) => (answer += data));
  socket.write("GET /whoami HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".repeat(3));
  await waitFor(() => (answer.split('"identity"').length >= 4 ? true : undefined), 2000, "three answers");
  socket.destroy();
  expect(answer.match(/"identity":"CN=alice","admin":false/g)?.length).toBe(3);
  expect(answer).not.toContain("CN=admin");
});

test("a client that stalls its handshake or its request head is cut within the 10 s deadlines", async () => {
  const closedWithin = (start: (done: () => void) => void) =>
    new Promise<number>((resolve) => {
      const started = Date.now();
      start(() => resolve(Date.now() - started));
    });
  const [handshake, head] = await Promise.all([
    closedWithin((done) => {
      const socket = connectTcp({ host: "127.0.0.1", port: daemon.port });
      socket.on("error", () => {});
      socket.on("close", done);
    }),
    closedWithin((done) => {
      const socket = connectTls({
        host: "127.0.0.1",
        port: daemon.port,
        servername: "localhost",
        ...identity("alice"),
      });
      socket.on("secureConnect", () => socket.write("GET /whoami HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
      socket.on("error", () => {});
      socket.on("close", done);
    }),
  ]);
  expect(handshake).toBeLessThan(15_000);
  expect(head).toBeLessThan(15_000);
}, 25_000);

async function streamSubscribers(): Promise<number> {
  const text = await (await fetch(`${streams.baseUrl}/metrics`, { tls: identity("admin") } as RequestInit)).text();
  return Number(/^spar_sse_subscribers (\d+)$/m.exec(text)?.[1] ?? Number.NaN);
}

async function inject(message: string): Promise<Response> {
  return fetch(`${streams.baseUrl}/sessions/default/inject`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ message }),
    tls: identity("alice"),
  } as RequestInit);
}

test("an event stream whose client stops reading is cut once its backlog passes the subscriber byte bound", async () => {
  const socket = connectTls({ host: "127.0.0.1", port: streams.port, servername: "localhost", ...identity("alice") });
  await new Promise<void>((resolve) => socket.once("secureConnect", () => resolve()));
  let closed = false;
  socket.on("data", () => {});
  socket.on("close", () => (closed = true));
  socket.on("error", () => {});
  // Live only (a cursor past the head), then never read again: frames pile up behind it.
  socket.write("GET /sessions/default/events?since=1000000000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  await waitFor(async () => ((await streamSubscribers()) === 1 ? true : undefined), 5000, "the stream attached");
  socket.pause();
  expect(await streamSubscribers()).toBe(1);
  // ~20 KiB of frames a turn; the kernel's socket buffers take a few MiB before the daemon sees any backlog.
  let subscribers = 1;
  for (let turn = 0; turn < 1500 && subscribers > 0; turn++) {
    expect((await inject("x".repeat(6000))).status).toBe(200);
    // Pacing, so the daemon's own subscriber accounting keeps up: the bound hit is the socket's.
    await Bun.sleep(5);
    if (turn % 25 === 24) subscribers = await streamSubscribers();
  }
  expect(subscribers).toBe(0);
  socket.resume();
  await waitFor(() => (closed ? true : undefined), 3000, "the socket closed");
  expect(closed).toBe(true);
}, 60_000);

test("event streams dropped by their clients release their subscriptions", async () => {
  const aborts = Array.from({ length: 10 }, () => new AbortController());
  const opened = await Promise.all(
    aborts.map((abort) =>
      fetch(`${streams.baseUrl}/sessions/default/events?since=1000000000`, {
        tls: identity("alice"),
        signal: abort.signal,
      } as RequestInit),
    ),
  );
  for (const response of opened) await response.body?.getReader().read();
  expect(await streamSubscribers()).toBe(10);
  for (const abort of aborts) abort.abort();
  const left = await waitFor(async () => ((await streamSubscribers()) === 0 ? 0 : undefined), 2000, "no subscriber");
  expect(left).toBe(0);
});

test("a body over the listener's 1 MiB cap is refused 413 with a JSON body, declared or chunked", async () => {
  const declared = await fetch(`${streams.baseUrl}/sessions/default/inject`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "x".repeat(2 * 1024 * 1024),
    tls: identity("alice"),
  } as RequestInit);
  expect(declared.status).toBe(413);
  expect(await declared.json()).toEqual({ error: "request body over the listener's 1048576-byte limit" });
  const chunks = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let i = 0; i < 40; i++) controller.enqueue(new Uint8Array(64 * 1024).fill(120));
      controller.close();
    },
  });
  const chunked = await fetch(`${streams.baseUrl}/sessions/default/inject`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: chunks,
    tls: identity("alice"),
  } as RequestInit);
  expect(chunked.status).toBe(413);
  expect(((await chunked.json()) as { error: string }).error).toContain("1048576-byte limit");
  expect((await inject("still served")).status).toBe(200);
});

describe("certificates alone tell callers apart: the auth block and the admin-only rules apply (D330)", () => {
  const as = (name: string, init: RequestInit = {}) => ({ ...init, tls: identity(name) }) as RequestInit;
  const post = (path: string, body: unknown, name: string) =>
    fetch(
      `${certOnly.baseUrl}${path}`,
      as(name, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
    );

  test("admin_identities names the admin certificate; another certificate is no admin", async () => {
    expect(await (await fetch(`${certOnly.baseUrl}/whoami`, as("admin"))).json()).toMatchObject({
      identity: "CN=admin",
      admin: true,
      source: "mtls",
    });
    expect(await (await fetch(`${certOnly.baseUrl}/whoami`, as("alice"))).json()).toMatchObject({
      identity: "CN=alice",
      admin: false,
    });
  });

  test("a non-admin certificate cannot set the daemon-wide price book (403), an admin can", async () => {
    expect((await post("/sessions", { sessionID: "alices-cert" }, "alice")).status).toBe(201);
    const price = { model: "echo", input_usd_per_mtok: 1_000_000, output_usd_per_mtok: 1_000_000 };
    const refused = await post("/sessions/alices-cert/pricing/set", price, "alice");
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: string }).error).toContain("only an admin");
    expect((await post("/sessions/alices-cert/pricing/set", { ...price, input_usd_per_mtok: 1 }, "admin")).status).toBe(
      204,
    );
  });

  test("/metrics shows every tenant's activity: admins only (403 for another certificate)", async () => {
    const refused = await fetch(`${certOnly.baseUrl}/metrics`, as("bob"));
    expect(refused.status).toBe(403);
    expect(refused.headers.get("content-type")).toContain("application/json");
    expect((await fetch(`${certOnly.baseUrl}/metrics`, as("admin"))).status).toBe(200);
  });

  test("proxy_identities applies: the gateway certificate may assert a caller, another certificate may not", async () => {
    const asserted = await fetch(
      `${certOnly.baseUrl}/whoami`,
      as("gateway", { headers: { "x-asserted-caller": "CN=bob" } }),
    );
    expect(await asserted.json()).toMatchObject({ identity: "CN=bob", source: "asserted" });
    const refused = await fetch(
      `${certOnly.baseUrl}/whoami`,
      as("alice", { headers: { "x-asserted-caller": "CN=bob" } }),
    );
    expect(refused.status).toBe(401);
    const admin = await fetch(
      `${certOnly.baseUrl}/whoami`,
      as("gateway", { headers: { "x-asserted-caller": "CN=admin" } }),
    );
    expect(admin.status).toBe(401);
  });
});
