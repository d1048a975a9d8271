/**
 * The worker transports' coalescing (worker-port-transport.ts): the first message of a job is
 * posted at once, the rest of the job's go out together in order as one array, every end delivers
 * such an array message by message, and a queued message that cannot be cloned still reaches an
 * answer (its requester hears an error) instead of leaving a request pending.
 */
import { expect, test } from "bun:test";
import type { RpcMessage } from "../../../src/rpc/rpc-message.ts";
import type { TransportListener } from "../../../src/rpc/rpc-transport.ts";
import { messagePortTransport, workerScopeTransport, workerTransport } from "../../../src/rpc/worker-port-transport.ts";

/** A stand-in for a Worker (or a worker's scope) that structured-clones what is posted, as a port does. */
function fakePort() {
  const posted: unknown[] = [];
  const port = {
    onmessage: null as ((event: MessageEvent) => void) | null,
    onerror: null as ((event: ErrorEvent) => void) | null,
    postMessage(data: unknown) {
      posted.push(structuredClone(data));
    },
    terminate() {},
  };
  return { port, posted };
}

function recordingListener() {
  const heard: unknown[] = [];
  const listener: TransportListener = { message: (data) => heard.push(data), error: () => {}, closed: () => {} };
  return { listener, heard };
}

const note = (text: string): RpcMessage => ({ type: "note", text });

test("the first message of a job is posted at once; the job's later ones follow as one post, in order", async () => {
  const { port, posted } = fakePort();
  const transport = workerTransport(port as unknown as Worker);
  transport.start(recordingListener().listener);
  transport.send(note("a"));
  transport.send(note("b"));
  transport.send(note("c"));
  expect(posted).toEqual([note("a")]);
  await Promise.resolve();
  expect(posted).toEqual([note("a"), [note("b"), note("c")]]);
  // A later job starts again with a post at once.
  transport.send(note("d"));
  expect(posted).toEqual([note("a"), [note("b"), note("c")], note("d")]);
});

test("every end delivers a coalesced post message by message, in order", () => {
  const scope = fakePort().port;
  const { listener, heard } = recordingListener();
  workerScopeTransport(scope).start(listener);
  scope.onmessage?.({ data: [note("a"), note("b")] } as MessageEvent);
  scope.onmessage?.({ data: note("c") } as MessageEvent);
  const channel = new MessageChannel();
  const port = recordingListener();
  messagePortTransport(channel.port1).start(port.listener);
  channel.port1.onmessage?.({ data: [note("x"), note("y")] } as never);
  channel.port1.close();
  expect(heard).toEqual([note("a"), note("b"), note("c")]);
  expect(port.heard).toEqual([note("x"), note("y")]);
});

test("a queued answer that cannot be cloned reaches its requester as an error; the rest of the job is delivered", async () => {
  const { port, posted } = fakePort();
  const transport = workerScopeTransport(port);
  transport.start(recordingListener().listener);
  transport.send(note("first"));
  transport.send({ type: "rpc.result", requestId: 7, value: () => "a function cannot be cloned" });
  transport.send(note("after"));
  await Promise.resolve();
  expect(posted[0]).toEqual(note("first"));
  expect(posted[1]).toMatchObject({ type: "rpc.error", requestId: 7 });
  expect((posted[1] as { message: string }).message).toStartWith("the answer could not be sent:");
  expect(posted[2]).toEqual(note("after"));
});

test("a queued request that cannot be cloned fails at the sending end instead of staying pending", async () => {
  const { port, posted } = fakePort();
  const transport = workerTransport(port as unknown as Worker);
  const { listener, heard } = recordingListener();
  transport.start(listener);
  transport.send(note("first"));
  transport.send({ type: "run", requestId: 3, callback: () => {} });
  await Promise.resolve();
  expect(posted).toEqual([note("first")]);
  expect(heard).toHaveLength(1);
  expect(heard[0]).toMatchObject({ type: "rpc.error", requestId: 3 });
  expect((heard[0] as { message: string }).message).toStartWith("the request could not be sent:");
});

test("close posts what the job queued before the worker is terminated", () => {
  const { port, posted } = fakePort();
  let terminated = false;
  port.terminate = () => {
    terminated = posted.length === 2;
  };
  const transport = workerTransport(port as unknown as Worker);
  transport.start(recordingListener().listener);
  transport.send(note("a"));
  transport.send(note("b"));
  transport.close();
  expect(posted).toEqual([note("a"), note("b")]);
  expect(terminated).toBe(true);
});
