/**
 * svc's `POST /pause` and `POST /extend-token` (docs/svc-pauses.md#gate-pause,
 * docs/svc-pauses.md#expired-token). `/pause {session_id, reason, message?, metadata?, resume_at?,
 * interrupt?, ttl?}` gate-pauses an incident: every later turn kind is refused until it is resumed
 * with the token this answer carries (200 `{token, session_id, reason, expires_at, resume_at?,
 * replaced}`), by a timer at `resume_at`, or never (abort). `reason` is one of the nine of
 * docs/svc-pauses.md#gate-pause; `ttl` a Go duration up to 168h; `interrupt` also cancels the turns
 * in flight. `/extend-token {token, ttl}` sets the token's expiry to now + ttl (200 `{token,
 * session_id, expires_at}`). Bodies are strict (an unknown field is a 400 naming it); reserved and
 * unusable ids are 400.
 */
import { Elysia } from "elysia";
import * as v from "valibot";
import { parseDuration } from "../../core/duration.ts";
import { SparError } from "../../core/errors.ts";
import { json } from "../../surfaces/http/responses.ts";
import { withCaller } from "../../surfaces/http/with-caller.ts";
import type { Caller } from "../../surfaces/http/caller-auth.ts";
import type { PauseAnswer, PauseRequest } from "../pause/session-pauses.ts";
import { PAUSE_REASONS } from "../pause/resume-token.ts";
import { refuseUnwritableId } from "./inject-envelope.ts";

/** Strict bodies: an unknown key names itself, a missing one says what is required. */
function strictMessage(required: string) {
  return (issue: v.BaseIssue<unknown>) => {
    if (issue.expected === "never") return "unknown field";
    return required;
  };
}

export const PauseBody = v.strictObject(
  {
    session_id: v.pipe(v.string("session_id is required (a string)"), v.minLength(1, "session_id must not be empty")),
    reason: v.picklist(PAUSE_REASONS, `reason must be one of ${PAUSE_REASONS.join(", ")}`),
    message: v.optional(v.string("message must be a string")),
    metadata: v.optional(v.record(v.string(), v.unknown(), "metadata must be a JSON object")),
    resume_at: v.optional(v.string("resume_at must be an RFC 3339 time")),
    interrupt: v.optional(v.boolean("interrupt must be true or false")),
    ttl: v.optional(v.string("ttl must be a duration such as 48h")),
  },
  strictMessage("session_id and reason are required"),
);

export const ExtendTokenBody = v.strictObject(
  {
    token: v.string("token is required (a string)"),
    ttl: v.string("ttl is required (a duration such as 48h)"),
  },
  strictMessage("token and ttl are required"),
);

export interface PausePort {
  pause(request: PauseRequest): Promise<PauseAnswer>;
  extendToken(token: string, ttlMs: number, caller: Caller): Promise<{ session_id: string; expires_at: string }>;
}

/** A Go duration in ms, or 400 naming the field. */
export function durationField(name: string, text: string): number {
  const parsed = parseDuration(text);
  if (!parsed.ok) throw new SparError("bad_request", `${name}: ${parsed.error}`);
  return parsed.value;
}

/** An RFC 3339 time (with its offset), normalized to UTC, or 400 naming the field. */
export function timeField(name: string, text: string): string {
  const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;
  const at = Date.parse(text);
  if (!rfc3339.test(text) || Number.isNaN(at))
    throw new SparError("bad_request", `${name}: ${JSON.stringify(text)} is not an RFC 3339 time`);
  return new Date(at).toISOString();
}

export function pauseRoutes(port: PausePort) {
  return new Elysia({ name: "svc.pause-routes" })
    .use(withCaller)
    .post(
      "/pause",
      async ({ body, caller }) => {
        refuseUnwritableId(body.session_id, "session_id names");
        const answer = await port.pause({
          sessionId: body.session_id,
          reason: body.reason,
          ...(body.message === undefined ? {} : { message: body.message }),
          ...(body.metadata === undefined ? {} : { metadata: body.metadata }),
          ...(body.resume_at === undefined ? {} : { resumeAt: timeField("resume_at", body.resume_at) }),
          interrupt: body.interrupt ?? false,
          ...(body.ttl === undefined ? {} : { ttlMs: durationField("ttl", body.ttl) }),
          caller,
        });
        return json(200, answer);
      },
      { parse: "json", body: PauseBody },
    )
    .post(
      "/extend-token",
      async ({ body, caller }) => {
        const answer = await port.extendToken(body.token, durationField("ttl", body.ttl), caller);
        return json(200, { token: body.token, ...answer });
      },
      { parse: "json", body: ExtendTokenBody },
    );
}
