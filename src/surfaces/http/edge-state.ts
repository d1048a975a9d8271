/**
 * What the guards learn about one request before its route runs (the connection's certificate
 * subject, the resolved caller), kept beside the Request object itself: the guards run in
 * `onRequest`, before Elysia's context carries anything of ours, and hand it on to the `resolve`
 * that gives routes their `caller`.
 */
import type { Caller } from "./caller-auth.ts";

export interface EdgeState {
  /** The verified client certificate subject (mTLS), if any. */
  peer?: string;
  caller?: Caller;
}

const states = new WeakMap<Request, EdgeState>();

export function edgeState(request: Request): EdgeState {
  let state = states.get(request);
  if (state === undefined) {
    state = {};
    states.set(request, state);
  }
  return state;
}
