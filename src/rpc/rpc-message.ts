/**
 * The wire shape of the RPC layer: every message that crosses a transport is one flat
 * structured-clone object. A request or notification is its params' own fields plus `type` (the
 * method) and, for a request, `requestId`: `{ type: "text-delta", turnId, text }`. Flat on
 * purpose: Bun clones an object of primitive fields on a fast path, and one nesting level more
 * costs about 1.9x per message (measured, see the decision on the RPC layer). The layer's own
 * messages have `rpc.` types, so no method may start with `rpc.`. Owns the shapes and the guard;
 * knows no method names.
 */

/** Prefix of the layer's own message types; a channel method may not start with it. */
export const RESERVED_PREFIX = "rpc.";

/** Opener -> acceptor, first message: the channel version and the opener's init payload. */
export interface HelloMessage {
  type: "rpc.hello";
  version: number;
  init: unknown;
}

/** Acceptor -> opener, the answer to `hello`: the acceptor's own channel version. */
export interface ReadyMessage {
  type: "rpc.ready";
  version: number;
}

/** The handler's value for request `requestId` (ids are per sender). */
export interface ResultMessage {
  type: "rpc.result";
  requestId: number;
  value: unknown;
}

/** The handler of request `requestId` failed (or none exists): the requester rejects with `message`. */
export interface ErrorMessage {
  type: "rpc.error";
  requestId: number;
  message: string;
}

/** The requester asks the handler of its request to stop; `reason` becomes the handler's abort reason. */
export interface CancelMessage {
  type: "rpc.cancel";
  requestId: number;
  reason?: string;
}

/** Liveness: a peer whose event loop runs answers `rpc.pong` with the same id at once. */
export interface PingMessage {
  type: "rpc.ping";
  id: number;
}

export interface PongMessage {
  type: "rpc.pong";
  id: number;
}

export type ControlMessage =
  | HelloMessage
  | ReadyMessage
  | ResultMessage
  | ErrorMessage
  | CancelMessage
  | PingMessage
  | PongMessage;

/**
 * A request (`requestId` set) or a notification (none): `type` is the method, the other fields
 * are the params'. The receiver hands the message itself to the handler as its params.
 */
export interface MethodMessage {
  type: string;
  requestId?: number;
  [field: string]: unknown;
}

export type RpcMessage = ControlMessage | MethodMessage;

/** The fields a channel's params may not use: the envelope's own. */
export interface EnvelopeFields {
  type?: never;
  requestId?: never;
}

/** An object with a string `type`: the receiver ignores types it does not know. */
export function isRpcMessage(value: unknown): value is RpcMessage {
  return typeof value === "object" && value !== null && typeof (value as { type?: unknown }).type === "string";
}
