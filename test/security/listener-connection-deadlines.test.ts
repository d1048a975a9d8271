/**
 * One idle and body-read deadline on every listener (issue 27 item 6, D331), real processes: a
 * svc daemon with its main, attach, A2A and AG-UI listeners and `--attach-idle-timeout=2s`, an
 * agent with the same, and a watcher's probe listener. On each: a body that stalls after a few
 * bytes, sent with a credential the listener accepts (the AG-UI run endpoint kept such bodies
 * forever), is closed after the idle timeout; a body that trickles in byte by byte is refused 408
 * with a JSON body once the same time has passed; a connection silent after its answer is closed.
 * A handler that runs longer than the idle timeout (a slow model turn) is still answered: the
 * timeout bounds the client, not the server's work. All sockets of a test run at once.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { appendFileSync } from "node:fs";
import { type Socket, connect } from "node:net";
import { join } from "node:path";
import { type FakeApiserver, startFakeApiserver } from "../../scripts/fake-apiserver/server.ts";
import { A2A_SECRET } from "../support/a2a-daemon.ts";
import { AGUI_SECRET, aguiWorkload, signedToken } from "../support/agui-daemon.ts";
import { type Daemon, startDaemon, tempDir } from "../support/daemon.ts";
import { daemonScope } from "../support/daemon-scope.ts";
import { AUTH, gatedDaemonOptions } from "../support/gated-workload.ts";
import { writeKubeconfig } from "../support/kube.ts";
import { say, stall } from "../support/scripted.ts";
import { type WatcherProcess, spawnWatcher } from "../support/watcher-process.ts";

const IDLE_SECONDS = 2;
const ATTACH_TOKEN = "attach-s3cret";

interface Listener {
  name: string;
  port: number;
  /** A write route the listener reads a body for, once the credential passed. */
  write: string;
  headers: Record<string, string>;
  /** A route answered at once, for the keep-alive check. */
  read: string;
}

const scope = daemonScope({ per: "file" });
let svc: Daemon;
let agent: Daemon;
let api: FakeApiserver;
let watcher: WatcherProcess;
const listeners: Listener[] = [];

const portOf = (log: string, pattern: RegExp) => Number(pattern.exec(log)?.[1] ?? Number.NaN);

beforeAll(async () => {
  const workload = aguiWorkload({ scopes: ["agui.run"] });
  appendFileSync(join(workload.directory, "workload.yaml"), "a2a:\n  expose: true\n  skill_name: Gated change\n");
  api = await startFakeApiserver({ tokens: { "kube-token": "watcher" } });
  const kubeconfig = writeKubeconfig(join(tempDir(), "kubeconfig"), { server: api.url, token: "kube-token" });
  [svc, agent, watcher] = await Promise.all([
    scope.start(
      gatedDaemonOptions(workload, [stall("thinking", 5000, "slow answer"), say("done")], {
        sessionDb: join(tempDir(), "svc.db"),
        args: [
          "--agui-listen=127.0.0.1:0",
          "--a2a-listen=127.0.0.1:0",
          "--attach-listen=127.0.0.1:0",
          `--attach-idle-timeout=${IDLE_SECONDS}s`,
        ],
        env: { SVC_AGUI_TOKEN: AGUI_SECRET, SVC_A2A_TOKEN: A2A_SECRET, SVC_ATTACH_TOKEN: ATTACH_TOKEN },
      }),
    ),
    startDaemon({ args: [`--attach-idle-timeout=${IDLE_SECONDS}s`] }),
    spawnWatcher(["--dry-run", `--kubeconfig=${kubeconfig}`, "--cluster-name=deadlines"]),
  ]);
  const log = svc.log();
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  listeners.push(
    { name: "agent attach", port: agent.port, write: "/sessions/default/inject", headers: {}, read: "/healthz" },
    { name: "svc main", port: svc.port, write: "/inject", headers: AUTH, read: "/healthz" },
    {
      name: "svc attach",
      port: portOf(log, /attach surface at http:\/\/[^ ]+:(\d+) /),
      write: "/sessions/x/inject",
      headers: bearer(ATTACH_TOKEN),
      read: "/healthz",
    },
    {
      name: "svc A2A",
      port: portOf(log, /A2A listener at http:\/\/[^ ]+:(\d+)/),
      write: "/a2a",
      headers: bearer(A2A_SECRET),
      read: "/.well-known/agent-card.json",
    },
    {
      name: "svc AG-UI",
      port: portOf(log, /AG-UI listener at http:\/\/[^ ]+:(\d+)/),
      write: "/agui/gated",
      headers: bearer(signedToken({ sub: "bob", scope: "agui.run" })),
      read: "/agui/agents.json",
    },
  );
  for (const listener of listeners) expect(Number.isInteger(listener.port)).toBe(true);
});
afterAll(async () => {
  await Promise.all([agent.sigterm(), watcher.stop()]);
  await api.stop();
});

interface OpenSocket {
  socket: Socket;
  /** Everything the server sent. */
  received(): string;
  /** Milliseconds from the open to the server's close, or "open" after `ms`. */
  closedWithin(ms: number): Promise<number | "open">;
}

function open(port: number, bytes: string): OpenSocket {
  const started = Date.now();
  let text = "";
  const socket = connect(port, "127.0.0.1");
  socket.on("error", () => {});
  socket.on("data", (chunk) => {
    text += chunk.toString("latin1");
  });
  const closed = new Promise<number>((resolve) => socket.on("close", () => resolve(Date.now() - started)));
  socket.on("connect", () => socket.write(bytes));
  return {
    socket,
    received: () => text,
    // Deadline: still open after `ms` is what the callers assert on.
    closedWithin: (ms) => Promise.race([closed, Bun.sleep(ms).then(() => "open" as const)]),
  };
}

const head = (listener: Listener, length: number) =>
  [
    `POST ${listener.write} HTTP/1.1`,
    "Host: 127.0.0.1",
    "Content-Type: application/json",
    `Content-Length: ${length}`,
    ...Object.entries(listener.headers).map(([name, value]) => `${name}: ${value}`),
    "",
    "",
  ].join("\r\n");

test("a body that stalls after a few bytes, with an accepted credential, is closed after the idle timeout on every listener", async () => {
  const sockets = listeners.map((listener) => ({ listener, open: open(listener.port, `${head(listener, 100)}{"mes`) }));
  const closed = await Promise.all(
    sockets.map(async ({ listener, open }) => [listener.name, await open.closedWithin(15_000)]),
  );
  for (const [name, at] of closed) {
    expect({ name, closed: at !== "open" }).toEqual({ name, closed: true });
    expect(at as number).toBeGreaterThanOrEqual(IDLE_SECONDS * 1000 - 500);
  }
});

test("a body that trickles in a byte at a time is refused 408 with a JSON body on every listener", async () => {
  const trickles = listeners.map((listener) => {
    const socket = open(listener.port, head(listener, 200));
    const timer = setInterval(() => socket.socket.write(" "), 400);
    return { listener, socket, timer };
  });
  try {
    for (const { listener, socket } of trickles) {
      expect({ name: listener.name, closed: (await socket.closedWithin(15_000)) !== "open" }).toEqual({
        name: listener.name,
        closed: true,
      });
      const answer = socket.received();
      expect({ name: listener.name, status: answer.split("\r\n")[0] }).toEqual({
        name: listener.name,
        status: "HTTP/1.1 408 Request Timeout",
      });
      expect(answer.toLowerCase()).toContain("content-type: application/json");
      expect(answer).toContain(`request body did not arrive whole within ${IDLE_SECONDS} s`);
    }
  } finally {
    for (const { timer } of trickles) clearInterval(timer);
  }
});

test("a connection silent after its answer is closed on every listener, the watcher's probes within their 10 s", async () => {
  const watcherPort = Number(new URL(watcher.base).port);
  const targets = [
    ...listeners.map((listener) => ({ name: listener.name, port: listener.port, path: listener.read, bound: 10_000 })),
    { name: "watcher probes", port: watcherPort, path: "/healthz", bound: 25_000 },
  ];
  const sockets = targets.map((target) => ({
    target,
    open: open(target.port, `GET ${target.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`),
  }));
  for (const { target, open: socket } of sockets) {
    const at = await socket.closedWithin(target.bound);
    expect({ name: target.name, closed: at !== "open" }).toEqual({ name: target.name, closed: true });
    expect(socket.received()).toStartWith("HTTP/1.1 200");
  }
}, 40_000);

test("a handler that runs longer than the idle timeout is answered: a model turn of 5 s behind svc's /inject", async () => {
  const started = Date.now();
  const response = await fetch(`${svc.baseUrl}/inject`, {
    method: "POST",
    headers: { "content-type": "application/json", ...AUTH },
    body: JSON.stringify({ uid: "slow-1", reason: "ScaleUp", name: "web" }),
  });
  expect(response.status).toBe(202);
  expect(Date.now() - started).toBeGreaterThanOrEqual(IDLE_SECONDS * 1000);
  expect(await response.json()).toMatchObject({ status: "accepted" });
});
