/**
 * Transports over the structured-clone ports Bun gives us: a Worker seen from the thread that
 * made it, a worker's own `self`, and one end of a MessageChannel. Each posts messages as they
 * are (no copy, no wrapping) and reports a crash or a close to the connection. Owns no protocol.
 */
import type { TransportListener, RpcTransport } from "./rpc-transport.ts";
import type { RpcMessage } from "./rpc-message.ts";

/**
 * The main side of a worker. `error` is the worker's uncaught error; `closed` is its exit (a
 * `process.exit`, a terminate, or after a crash). `close()` terminates it.
 */
export function workerTransport(worker: Worker): RpcTransport {
  return {
    start(listener: TransportListener): void {
      worker.onmessage = (event: MessageEvent) => listener.message(event.data);
      worker.onerror = (event: ErrorEvent) => listener.error(event.message);
      // Optional call: a stand-in that only records what is posted (a test's) has no events.
      worker.addEventListener?.("close", () => listener.closed());
    },
    send(message: RpcMessage): void {
      worker.postMessage(message);
    },
    close(): void {
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
  return {
    start(listener: TransportListener): void {
      scope.onmessage = (event: MessageEvent) => listener.message(event.data);
    },
    send(message: RpcMessage): void {
      scope.postMessage(message);
    },
    close(): void {
      scope.onmessage = null;
    },
  };
}

/** One end of a MessageChannel (in one thread, or handed to a worker). `closed` fires when either end closes. */
export function messagePortTransport(port: MessagePort): RpcTransport {
  return {
    start(listener: TransportListener): void {
      port.onmessage = (event) => listener.message(event.data);
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
