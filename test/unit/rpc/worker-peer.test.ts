/**
 * The RPC layer against a real Worker (fixtures/peer-worker.ts): the worker transport, liveness
 * (a peer whose thread spins stops answering pings and is reported; an idle one is not pinged), and
 * faults (an uncaught error in the worker, a worker that exits) that fail every pending request.
 */
import { afterEach, expect, test } from "bun:test";
import { LivenessWatch } from "../../../src/rpc/liveness-watch.ts";
import { RpcConnection } from "../../../src/rpc/rpc-connection.ts";
import type { RpcError } from "../../../src/rpc/rpc-error.ts";
import { workerTransport } from "../../../src/rpc/worker-port-transport.ts";
import { TEST_CHANNEL } from "./fixtures/test-channel.ts";

const cleanups: Array<() => void> = [];

afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function startPeer() {
  const faults: RpcError[] = [];
  const { promise: ready, resolve } = Promise.withResolvers<void>();
  const { promise: faulted, resolve: onFault } = Promise.withResolvers<RpcError>();
  const worker = new Worker(new URL("./fixtures/peer-worker.ts", import.meta.url));
  const connection = RpcConnection.open(
    TEST_CHANNEL,
    workerTransport(worker),
    { greeting: "hi" },
    {
      onReady: resolve,
      onFault: (error) => {
        faults.push(error);
        onFault(error);
      },
    },
  );
  cleanups.push(() => connection.close("test over"));
  return { connection, faults, ready, faulted };
}

test("a worker peer answers over the worker transport", async () => {
  const { connection, ready } = startPeer();
  await ready;
  expect(await connection.request("echo", { text: "through a thread" })).toEqual({ text: "through a thread" });
});

test("liveness: a busy peer that answers pings is not reported; an idle one is not pinged", async () => {
  const { connection, ready } = startPeer();
  await ready;
  const watch = new LivenessWatch(60_000);
  cleanups.push(() => watch.stop());
  let busy = false;
  const reported: number[] = [];
  watch.watch(connection, { busy: () => busy, onUnresponsive: (silentMs) => reported.push(silentMs) });
  const start = performance.now();
  watch.check(start);
  expect(connection.pingAge(start)).toBeUndefined();
  busy = true;
  watch.check(start);
  expect(connection.pingAge(start)).toBe(0);
  // The pong clears the ping; a check far past the window then finds nothing to report.
  while (connection.pingAge() !== undefined) await new Promise((resolve) => setImmediate(resolve));
  watch.check(start + 120_000);
  expect(reported).toEqual([]);
});

test("liveness: a peer whose thread spins leaves its ping unanswered and is reported once, with how long", async () => {
  const { connection, ready } = startPeer();
  await ready;
  const windowMs = 300;
  const watch = new LivenessWatch(windowMs);
  cleanups.push(() => watch.stop());
  const { promise: unresponsive, resolve } = Promise.withResolvers<number>();
  let reports = 0;
  watch.watch(connection, {
    busy: () => true,
    onUnresponsive: (silentMs) => {
      reports++;
      resolve(silentMs);
    },
  });
  void connection.request("spin", {}).catch(() => {});
  // The watch's own timer pings and reports: no hand-driven check here.
  const silentMs = await unresponsive;
  expect(silentMs).toBeGreaterThan(windowMs);
  watch.check(performance.now() + 10 * windowMs);
  expect(reports).toBe(1);
});

test("a peer that crashes is a fault with its error; every pending request fails", async () => {
  const { connection, ready, faulted } = startPeer();
  await ready;
  const pending = [
    connection.request("wait", { ms: 60_000, answer: "never" }),
    connection.request("slow", { ms: 60_000 }),
  ].map((request) => request.catch((error: RpcError) => error));
  await connection.request("crash", { message: "boom in the worker" });
  const fault = await faulted;
  expect(fault.code).toBe("crashed");
  expect(fault.message).toContain("boom in the worker");
  const errors = await Promise.all(pending);
  expect(errors.map((error) => (error as RpcError).code)).toEqual(["closed", "closed"]);
  expect(connection.closed).toBe(true);
});

test("a peer that exits without an error closes the transport: a fault, and every pending request fails", async () => {
  const { connection, ready, faulted, faults } = startPeer();
  await ready;
  const pending = connection.request("wait", { ms: 60_000, answer: "never" }).catch((error: RpcError) => error);
  await connection.request("exit", {});
  expect((await faulted).code).toBe("closed");
  expect(await pending).toMatchObject({ code: "closed", message: "the test peer connection closed" });
  expect(faults).toHaveLength(1);
});
