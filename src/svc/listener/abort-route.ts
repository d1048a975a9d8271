/**
 * svc's `POST /abort`: aborts a session for good (docs/svc.md#aborting-a-session). The body is a
 * strict `{session_id, reason?}` (an unknown field is a 400 naming it), the reason defaults to
 * `operator abort`, and a reserved or unusable id is a 400. Answers 202 `{status: "aborted",
 * session_id}` once the marker is durable and the turn in flight has ended; 409 when the session is
 * aborted already, 404 when there is no such session. The daemon behind it is a port.
 */
import { Elysia } from "elysia";
import * as v from "valibot";
import type { Caller } from "../../surfaces/http/caller-auth.ts";
import { json } from "../../surfaces/http/responses.ts";
import { withCaller } from "../../surfaces/http/with-caller.ts";
import { refuseUnwritableId } from "./inject-envelope.ts";

/** The reason an abort without one records (docs/wire-compat.md#svcs-inherited-names). */
export const DEFAULT_ABORT_REASON = "operator abort";

/** The body of a write naming one session and why: `{session_id, reason?}`, strict (/abort, /ack-effects). */
export const SessionReasonBody = v.strictObject(
  {
    session_id: v.string("session_id is required (a string)"),
    reason: v.optional(v.string("reason must be a string")),
  },
  (issue) => {
    if (issue.expected === "never") return "unknown field";
    // A missing key is the object's issue, expecting the key's name.
    if (issue.expected === '"session_id"') return "session_id is required (a string)";
    return "the body must be a JSON object {session_id, reason?}";
  },
);

/** The reason the body gives, trimmed, else `fallback`. */
export function reasonOr(reason: string | undefined, fallback: string): string {
  return reason?.trim() ? reason.trim() : fallback;
}

export interface AbortRequest {
  sessionId: string;
  reason: string;
  caller: Caller;
}

export interface AbortPort {
  /** Abort the session: resolves once the marker is durable and its turn in flight has ended. */
  abort(request: AbortRequest): Promise<void>;
}

export const AbortAnswer = v.object({ status: v.literal("aborted"), session_id: v.string() });

export function abortRoute(port: AbortPort) {
  return new Elysia({ name: "svc.abort-route" }).use(withCaller).post(
    "/abort",
    async ({ body, caller }) => {
      refuseUnwritableId(body.session_id, "session_id names");
      const reason = reasonOr(body.reason, DEFAULT_ABORT_REASON);
      await port.abort({ sessionId: body.session_id, reason, caller });
      return json(202, { status: "aborted", session_id: body.session_id });
    },
    { parse: "json", body: SessionReasonBody },
  );
}
