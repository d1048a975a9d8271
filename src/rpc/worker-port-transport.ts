/**
 * Transports over the structured-clone ports Bun gives us: a Worker seen from the thread that
 * made it, a worker's own `self`, and one end of a MessageChannel. Each reports a crash or a close
 * to the connection and owns no protocol. A worker's two ends coalesce: the first message of an
 * event-loop job is posted at once, the ones sent after it in the same job go out together, as
 * one array, when the job's microtasks run (a group commit settling twenty turns' requests wakes
 * the peer twice, not twenty times; a post to a sleeping thread costs far more than the copy).
 * Every end accepts such an array and delivers its messages in order.
 */
import type { TransportListener, RpcTransport } from "./rpc-transport.ts";
import type { RpcMessage } from "./rpc-message.ts";

/** One received `data`: a message, or the messages an Outbox sent together. */
function deliver(listener: TransportListener, data: unknown): void {
  if (!Array.isArray(data)) {
    listener.message(data);
    return;
  }
  for (const message of data) listener.message(message);
}

/**
 * The coalescing sender of a worker's end. The first message of a job is posted at once (a
 * message that cannot be cloned throws to its sender, as `send` promises); the rest wait for the
 * job's microtasks. A queued message that cannot be cloned is reported to `undeliverable` (the
 * batch it was in goes out one by one, so only it is lost).
 */
class Outbox {
  #queue: RpcMessage[] = [];
  #open = false;
  readonly #post: (data: unknown) => void;
  readonly #undeliverable: (message: RpcMessage, error: unknown) => void;

  constructor(post: (data: unknown) => void, undeliverable: (message: RpcMessage, error: unknown) => void) {
    this.#post = post;
    this.#undeliverable = undeliverable;
  }

  send(message: RpcMessage): void {
    if (this.#open) {
      this.#queue.push(message);
      return;
    }
    this.#post(message);
    this.#open = true;
    queueMicrotask(() => this.flush());
  }

  /** Post what is queued now (also before the port closes). */
  flush(): void {
    this.#open = false;
    const batch = this.#queue;
    if (batch.length === 0) return;
    this.#queue = [];
    try {
      this.#post(batch.length === 1 ? batch[0] : batch);
      return;
    } catch {
      // One of them cannot be cloned: send them one by one so only that one is lost.
    }
    for (const message of batch) {
      try {
        this.#post(message);
      } catch (error) {
        this.#undeliverable(message, error);
      }
    }
  }
}

/**
 * What to do with a queued message that cannot be cloned: an answer becomes the requester's error
 * (as RpcConnection does for one that fails at once); a request fails at this end.
 */
function undeliverableTo(listener: () => TransportListener | undefined, post: (data: unknown) => void) {
  return (message: RpcMessage, error: unknown): void => {
    const text = error instanceof Error ? error.message : String(error);
    const requestId = (message as { requestId?: unknown }).requestId;
    if (typeof requestId !== "number") return;
    if (message.type === "rpc.result") {
      post({ type: "rpc.error", requestId, message: `the answer could not be sent: ${text}` });
      return;
    }
    if (message.type === "rpc.error") return;
    listener()?.message({ type: "rpc.error", requestId, message: `the request could not be sent: ${text}` });
  };
}

/**
 * The main side of a worker. `error` is the worker's uncaught error; `closed` is its exit (a
 * `process.exit`, a terminate, or after a crash). `close()` terminates it.
 */
export function workerTransport(worker: Worker): RpcTransport {
  let listening: TransportListener | undefined;
  const post = (data: unknown) => worker.postMessage(data);
  const outbox = new Outbox(
    post,
    undeliverableTo(() => listening, post),
  );
  return {
    start(listener: TransportListener): void {
      listening = listener;
      worker.onmessage = (event: MessageEvent) => deliver(listener, event.data);
      worker.onerror = (event: ErrorEvent) => listener.error(event.message);
      // Optional call: a stand-in that only records what is posted (a test's) has no events.
      worker.addEventListener?.("close", () => listener.closed());
    },
    send(message: RpcMessage): void {
      outbox.send(message);
    },
    close(): void {
      outbox.flush();
      worker.terminate();
    },
  };
}

/** What a worker's global scope offers: Bun types it as `Worker` (`declare const self: Worker`). */
export interface WorkerScope {
  postMessage(message: unknown): void;
  onmessage: ((event: MessageEvent) => void) | null;
}

/**
 * The worker side, over its global scope. The thread that owns the worker ends it; `close()` only
 * stops listening (a worker with no listener and no work left exits on its own).
 */
export function workerScopeTransport(scope: WorkerScope): RpcTransport {
  let listening: TransportListener | undefined;
  const post = (data: unknown) => scope.postMessage(data);
  const outbox = new Outbox(
    post,
    undeliverableTo(() => listening, post),
  );
  return {
    start(listener: TransportListener): void {
      listening = listener;
      scope.onmessage = (event: MessageEvent) => deliver(listener, event.data);
    },
    send(message: RpcMessage): void {
      outbox.send(message);
    },
    close(): void {
      outbox.flush();
      scope.onmessage = null;
    },
  };
}

/** One end of a MessageChannel (in one thread, or handed to a worker). `closed` fires when either end closes. */
export function messagePortTransport(port: MessagePort): RpcTransport {
  return {
    start(listener: TransportListener): void {
      port.onmessage = (event) => deliver(listener, event.data);
      port.addEventListener("close", () => listener.closed());
    },
    send(message: RpcMessage): void {
      port.postMessage(message);
    },
    close(): void {
      port.close();
    },
  };
}
