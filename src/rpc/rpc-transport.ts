/**
 * The transport interface the RPC layer runs over: deliver structured-clone messages in order,
 * report when the peer crashed or the link closed. Implementations: worker-port-transport.ts
 * (a Worker, a worker's `self`, a MessagePort). Owns only the interface.
 */
import type { RpcMessage } from "./rpc-message.ts";

/** What the connection hears from its transport. */
export interface TransportListener {
  /** A message arrived (not yet validated). */
  message(data: unknown): void;
  /** The peer had an uncaught error (a worker that threw); it may close next. */
  error(message: string): void;
  /** The link is gone: nothing more arrives and nothing sent is delivered. */
  closed(): void;
}

export interface RpcTransport {
  /** Begin delivering to `listener`; called once, by the connection, before its first send. */
  start(listener: TransportListener): void;
  /** Post one message; throws when it cannot be cloned (the caller's bug). */
  send(message: RpcMessage): void;
  /** Tear the link down (terminate a worker); the connection ignores what still arrives. */
  close(): void;
}
