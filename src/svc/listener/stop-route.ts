/**
 * svc's `POST /stop` (docs/svc-drain.md#svc-stop): a planned drain and exit, the SIGTERM path
 * with the interruption markers classified `operator stop[: reason]`. Body strict `{reason?,
 * pause_sessions?}`; an empty body is allowed. Answers 202 `{"drain_bound":"30s"}` (the drain
 * window) before the drain starts; from then on every write is 503 (draining-guard.ts), a second
 * /stop included. The daemon behind it is a port.
 */
import { Elysia } from "elysia";
import * as v from "valibot";
import type { Caller } from "../../surfaces/http/caller-auth.ts";
import { json } from "../../surfaces/http/responses.ts";
import { withCaller } from "../../surfaces/http/with-caller.ts";

export const StopBody = v.strictObject(
  {
    reason: v.optional(v.string("reason must be a string")),
    pause_sessions: v.optional(v.boolean("pause_sessions must be a boolean")),
  },
  (issue) =>
    issue.expected === "never" ? "unknown field" : "the body must be a JSON object {reason?, pause_sessions?}",
);

export interface StopRequest {
  /** The operator's reason, trimmed; undefined when none was given. */
  reason: string | undefined;
  pauseSessions: boolean;
  caller: Caller;
}

export interface StopPort {
  /** Start the drain (after this answer is sent) and resolve with the drain window in ms. */
  stop(request: StopRequest): number;
}

export const StopAnswer = v.object({ drain_bound: v.string() });

/** `30000` -> `30s` (Go's duration spelling, docs/wire-compat.md#the-zero-time). */
export function drainBound(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

export function stopRoute(port: StopPort) {
  return new Elysia({ name: "svc.stop-route" }).use(withCaller).post(
    "/stop",
    ({ body, caller }) => {
      const reason = body.reason?.trim() ? body.reason.trim() : undefined;
      const windowMs = port.stop({ reason, pauseSessions: body.pause_sessions === true, caller });
      return json(202, { drain_bound: drainBound(windowMs) });
    },
    { parse: "json", body: StopBody },
  );
}
