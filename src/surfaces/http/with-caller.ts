/**
 * Gives a listener's routes their `caller`, resolved by the auth guard before routing (every
 * listener's routes use it; a route never reads a header to learn who is calling).
 */
import { Elysia } from "elysia";
import { LOCAL_CALLER } from "./caller-auth.ts";
import { edgeState } from "./edge-state.ts";

export const withCaller = new Elysia({ name: "spar.caller" }).resolve({ as: "scoped" }, ({ request }) => ({
  caller: edgeState(request).caller ?? LOCAL_CALLER,
}));
