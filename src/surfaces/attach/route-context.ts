/**
 * What attach routes share: the session a path names (`/sessions/{sid}/...` and
 * `/sessions/{app}/{sid}/...` mount the same routes under `:p1` and `:p1/:p2`), the resolved
 * caller as routes receive it, the verified identity an audit row may name, and lifting the idle
 * timeout for a request that legitimately stays quiet (an event stream, a model-bound call).
 */
import { Elysia } from "elysia";
import type { SessionTarget } from "../../runtime/session-service.ts";
import { type Caller, LOCAL_CALLER } from "../http/caller-auth.ts";
import { edgeState } from "../http/edge-state.ts";

/** The session of a path: the qualified shape names its app, the shortcut only the id. */
export function targetOf(params: Readonly<Record<string, string | undefined>>): SessionTarget {
  const second = params.p2;
  return second === undefined ? { app: undefined, sid: params.p1 ?? "" } : { app: params.p1 ?? "", sid: second };
}

/** Gives a session route its `caller` and its `target` session. */
export const withSession = new Elysia({ name: "spar.session" }).resolve({ as: "scoped" }, ({ request, params }) => ({
  caller: edgeState(request).caller ?? LOCAL_CALLER,
  target: targetOf(params),
}));

/** The caller's identity when one was verified; never a placeholder for anonymous callers. */
export function verifiedIdentity(caller: Caller): string | undefined {
  return caller.source === "anonymous" ? undefined : caller.identity;
}
