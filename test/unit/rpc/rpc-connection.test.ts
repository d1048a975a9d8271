/**
 * The RPC layer's promises over a real MessageChannel (both ends in this thread, so every message
 * is structured-cloned as between threads): request and answer both ways, concurrent requests,
 * errors, notifications in order, cancel and abandon, the version handshake, and close.
 */
import { afterEach, expect, test } from "bun:test";
import { RpcConnection } from "../../../src/rpc/rpc-connection.ts";
import { RpcError, RpcVersionError } from "../../../src/rpc/rpc-error.ts";
import { messagePortTransport } from "../../../src/rpc/worker-port-transport.ts";
import {
  type HostSide,
  type PeerConnection,
  type PeerLog,
  type PeerSide,
  TEST_CHANNEL,
  TEST_CHANNEL_NEXT,
  servePeer,
} from "./fixtures/test-channel.ts";

interface Pair {
  host: RpcConnection<HostSide, PeerSide, { greeting: string }>;
  peer: PeerConnection;
  log: PeerLog;
  ports: MessageChannel;
  hostFaults: RpcError[];
  peerFaults: RpcError[];
  greetings: string[];
  ready: Promise<void>;
}

const open: Pair[] = [];

afterEach(() => {
  for (const pair of open.splice(0)) {
    pair.host.close("test over");
    pair.peer.close("test over");
  }
});

function pair(peerChannel = TEST_CHANNEL): Pair {
  const ports = new MessageChannel();
  const hostFaults: RpcError[] = [];
  const peerFaults: RpcError[] = [];
  const greetings: string[] = [];
  const { promise: ready, resolve } = Promise.withResolvers<void>();
  const peer = RpcConnection.accept(peerChannel, messagePortTransport(ports.port2), {
    onHello: (init) => greetings.push(init.greeting),
    onFault: (error) => peerFaults.push(error),
  });
  const log = servePeer(peer);
  const host = RpcConnection.open(
    TEST_CHANNEL,
    messagePortTransport(ports.port1),
    { greeting: "hi" },
    {
      onReady: resolve,
      onFault: (error) => hostFaults.push(error),
    },
  ).handle("double", (params) => params.n * 2);
  const created: Pair = { host, peer, log, ports, hostFaults, peerFaults, greetings, ready };
  open.push(created);
  return created;
}

/** Resolves when `predicate` holds, checked on every message-loop turn (no fixed sleep). */
async function until(predicate: () => boolean): Promise<void> {
  while (!predicate()) await new Promise((resolve) => setImmediate(resolve));
}

test("the handshake: the acceptor gets the opener's init, then both ends are ready", async () => {
  const { host, peer, greetings, ready } = pair();
  expect(host.ready).toBe(false);
  await ready;
  expect(host.ready).toBe(true);
  expect(peer.ready).toBe(true);
  expect(greetings).toEqual(["hi"]);
});

test("a request is answered with its handler's value, in both directions, and may be sent before the handshake ends", async () => {
  const { host } = pair();
  // Sent at once: messages stay in order, so the peer reads hello first.
  expect(await host.request("echo", { text: "one" })).toEqual({ text: "one" });
  // The peer asks the host back while answering.
  expect(await host.request("ask-back", { n: 21 })).toBe(42);
});

test("concurrent requests each get their own answer, whatever order they finish in", async () => {
  const { host } = pair();
  const asked = Array.from({ length: 20 }, (_, index) =>
    host.request("wait", { ms: (20 - index) * 3, answer: `answer ${index}` }),
  );
  const echoes = Array.from({ length: 20 }, (_, index) => host.request("echo", { text: `echo ${index}` }));
  expect(await Promise.all(asked)).toEqual(Array.from({ length: 20 }, (_, index) => `answer ${index}`));
  expect((await Promise.all(echoes)).map((answer) => answer.text)).toEqual(
    Array.from({ length: 20 }, (_, index) => `echo ${index}`),
  );
  expect(host.pendingCount).toBe(0);
});

test("a handler that throws or rejects fails the request with its message; an unknown method is named", async () => {
  const { host } = pair();
  const sync = await host.request("fail", { message: "bad input", async: false }).catch((error: unknown) => error);
  expect(sync).toBeInstanceOf(RpcError);
  expect(sync).toMatchObject({ code: "remote", message: "bad input" });
  expect(await host.request("fail", { message: "later", async: true }).catch((error: RpcError) => error)).toMatchObject(
    {
      code: "remote",
      message: "later",
    },
  );
  const unknown = host as unknown as { request(method: string, params: unknown): Promise<unknown> };
  expect(await unknown.request("no-such", {}).catch((error: RpcError) => error.message)).toBe(
    'the test peer channel has no method "no-such"',
  );
});

test("an answer that cannot be cloned fails the request instead of leaving it pending", async () => {
  const { host } = pair();
  const error = await host.request("unclonable-answer", {}).catch((caught: RpcError) => caught);
  expect(error).toMatchObject({ code: "remote" });
  expect((error as RpcError).message).toStartWith("the answer could not be sent:");
});

test("notifications arrive in order with the answers around them", async () => {
  const { host, log } = pair();
  const heard: string[] = [];
  host.onNotification("heard", (params) => heard.push(params.text));
  host.notify("note", { text: "a" });
  host.notify("note", { text: "b" });
  const answer = host.request("notify-then-answer", { text: "c" }).then((text) => {
    heard.push(text);
    return text;
  });
  expect(await answer).toBe("answered c");
  // The notification the peer sent before answering was delivered before the answer.
  expect(heard).toEqual(["c", "answered c"]);
  expect(log.notes).toEqual(["a", "b"]);
});

test("cancel: the handler's signal aborts with the given reason, and its answer still settles the request", async () => {
  const { host } = pair();
  const withReason = host.call("wait", { ms: 60_000, answer: "never" });
  const withoutReason = host.call("wait", { ms: 60_000, answer: "never" });
  withReason.cancel("the turn was cancelled");
  withoutReason.cancel();
  withoutReason.cancel("a second cancel is not sent");
  expect(withReason.cancelRequested).toBe(true);
  expect(await withReason.result).toBe("stopped: AbortError: the turn was cancelled");
  expect(await withoutReason.result).toStartWith("stopped: AbortError:");
  expect(await withoutReason.result).not.toContain("a second cancel");
});

test("a request's abort signal cancels it the same way", async () => {
  const { host } = pair();
  const controller = new AbortController();
  const answer = host.request(
    "wait",
    { ms: 60_000, answer: "never" },
    { signal: controller.signal, cancelReason: "stop" },
  );
  controller.abort();
  expect(await answer).toBe("stopped: AbortError: stop");
  const aborted = AbortSignal.abort();
  expect(await host.request("wait", { ms: 60_000, answer: "never" }, { signal: aborted, cancelReason: "early" })).toBe(
    "stopped: AbortError: early",
  );
});

test("abandon rejects at once; the handler's later answer is ignored and the connection goes on", async () => {
  const { host, log } = pair();
  const request = host.call("slow", { ms: 30 });
  request.abandon("no longer needed");
  const error = await request.result.catch((caught: RpcError) => caught);
  expect(error).toMatchObject({ code: "abandoned", message: "no longer needed" });
  expect(host.pendingCount).toBe(0);
  await until(() => log.slowAnswered === 1);
  // Messages are ordered: once the echo is answered, the late "late" answer has arrived too.
  expect(await host.request("echo", { text: "after" })).toEqual({ text: "after" });
  expect(host.pendingCount).toBe(0);
  expect(host.closed).toBe(false);
});

test("a version mismatch is a fault on both ends, naming both versions; the requests already sent fail", async () => {
  const { host, peer, hostFaults, peerFaults, greetings } = pair(TEST_CHANNEL_NEXT);
  const sent = host.request("echo", { text: "too early" }).catch((error: RpcError) => error);
  await until(() => host.closed);
  expect(hostFaults).toHaveLength(1);
  const fault = hostFaults[0];
  expect(fault).toBeInstanceOf(RpcVersionError);
  expect(fault).toMatchObject({ code: "version-mismatch", localVersion: 7, peerVersion: 8 });
  expect(fault?.message).toBe("test peer speaks v8, this side v7");
  expect(await sent).toMatchObject({ code: "closed", message: "test peer speaks v8, this side v7" });
  expect(peerFaults.map((error) => error.message)).toEqual(["test peer speaks v7, this side v8"]);
  expect(peer.closed).toBe(true);
  expect(greetings).toEqual([]);
  expect(host.ready).toBe(false);
});

test("an owner may close in onFault with its own reason; pending requests fail with that reason", async () => {
  const ports = new MessageChannel();
  servePeer(RpcConnection.accept(TEST_CHANNEL_NEXT, messagePortTransport(ports.port2)));
  const host = RpcConnection.open(
    TEST_CHANNEL,
    messagePortTransport(ports.port1),
    { greeting: "hi" },
    {
      onFault: (error) => {
        if (error instanceof RpcVersionError) host.close(`the peer is v${error.peerVersion}, we need v7`);
      },
    },
  );
  const sent = host.request("echo", { text: "x" }).catch((error: RpcError) => error.message);
  expect(await sent).toBe("the peer is v8, we need v7");
});

test("a transport that closes fails every pending request, and later requests fail at once", async () => {
  const { host, hostFaults, ports, ready } = pair();
  await ready;
  const pending = [
    host.request("wait", { ms: 60_000, answer: "never" }),
    host.request("slow", { ms: 60_000 }),
    host.request("wait", { ms: 60_000, answer: "never" }),
  ].map((request) => request.catch((error: RpcError) => error));
  // The peer's end goes away (as a worker that exits): the host hears the port close.
  ports.port2.close();
  const errors = await Promise.all(pending);
  expect(errors.map((error) => (error as RpcError).code)).toEqual(["closed", "closed", "closed"]);
  expect(hostFaults.map((error) => error.code)).toEqual(["closed"]);
  expect(host.closed).toBe(true);
  expect(await host.request("echo", { text: "x" }).catch((error: RpcError) => error.code)).toBe("closed");
});

test("close by the owner fails pending requests with its reason and is idempotent", async () => {
  const { host, peer, ready } = pair();
  await ready;
  const waiting = host.request("wait", { ms: 60_000, answer: "never" }).catch((error: RpcError) => error);
  host.close("shutting down");
  host.close("again");
  expect(await waiting).toMatchObject({ code: "closed", message: "shutting down" });
  // The peer's own outgoing request fails too once its end closes.
  peer.close("peer done");
  expect(await peer.request("double", { n: 1 }).catch((error: RpcError) => error.message)).toBe("peer done");
});
