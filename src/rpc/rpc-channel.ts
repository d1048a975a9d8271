/**
 * What a channel is, as types: each side's vocabulary (the requests it answers and the
 * notifications it accepts), the opener's init payload, and the channel's name and version. A
 * channel module (e.g. runtime/channel.ts) declares one with `defineChannel` and both sides import
 * it; the RPC layer itself knows no method.
 */
import type { EnvelopeFields } from "./rpc-message.ts";

/**
 * Params are an object whose fields travel flat beside the envelope's `type` and `requestId`
 * (rpc-message.ts), so they may not have fields of those names.
 */
export type RpcParams = object & EnvelopeFields;

/** The params of a method that needs none: send `{}`. */
export type NoParams = Record<never, never>;

/** One request method: what the requester sends and what the handler answers. */
export interface RpcMethod<Params extends RpcParams = RpcParams, Result = unknown> {
  params: Params;
  result: Result;
}

/**
 * One side's vocabulary. Declare it with a `type` alias (an interface has no index signature):
 * `type ToolHostSide = { requests: { run: RpcMethod<RunParams, ToolRunResult> }; notifications: NoNotifications }`.
 */
export interface RpcSide {
  requests: Record<string, RpcMethod>;
  notifications: Record<string, RpcParams>;
}

/** A side that answers nothing and accepts nothing. */
export type NoRequests = Record<never, RpcMethod>;
export type NoNotifications = Record<never, RpcParams>;

/**
 * A channel between an opener (it sends `hello`, e.g. the main thread) and an acceptor (it answers
 * `ready`, e.g. a worker). `version` is checked in the handshake: a mismatch is a fault on both sides.
 * Method names may not start with `rpc.` (the layer's own messages); `handle` refuses them.
 */
export interface RpcChannel<Opener extends RpcSide, Acceptor extends RpcSide, Init> {
  /** Names the channel in error messages ("turn worker"). */
  readonly name: string;
  readonly version: number;
  /** Types only, never set: what each side answers and what `hello` carries. */
  readonly sides?: { opener: Opener; acceptor: Acceptor; init: Init };
}

export function defineChannel<Opener extends RpcSide, Acceptor extends RpcSide, Init = undefined>(
  name: string,
  version: number,
): RpcChannel<Opener, Acceptor, Init> {
  return { name, version };
}

/** Method names of a side's requests / notifications. */
export type RequestName<Side extends RpcSide> = keyof Side["requests"] & string;
export type NotificationName<Side extends RpcSide> = keyof Side["notifications"] & string;
export type ParamsOf<Side extends RpcSide, Method extends RequestName<Side>> = Side["requests"][Method]["params"];
export type ResultOf<Side extends RpcSide, Method extends RequestName<Side>> = Side["requests"][Method]["result"];
