/**
 * svc's `POST /ack-effects` (spec: States and transitions, ambiguous-effect; reference 3.4): an
 * operator acknowledges the calls of a session whose effect is unknown (cut while they ran), so
 * its mutating calls are no longer refused with `ambiguous_prior_effect`. The acknowledgement is
 * durable and covers only the calls persisted up to that moment. Body strict `{session_id,
 * reason?}` (reason default `operator ack`); a reserved or unusable id is a 400. Answers 202
 * `{status: "acknowledged", session_id, acknowledged, state, pending}` (`acknowledged`: how many
 * calls it covered, 0 when none was ambiguous); 404 for no such session.
 */
import { Elysia } from "elysia";
import * as v from "valibot";
import { json } from "../../surfaces/http/responses.ts";
import { withCaller } from "../../surfaces/http/with-caller.ts";
import { refuseUnwritableId } from "./inject-envelope.ts";
import type { AckEffectsRequest, SessionStatus } from "./listener-port.ts";

export const DEFAULT_ACK_REASON = "operator ack";

export const AckEffectsBody = v.strictObject(
  {
    session_id: v.string("session_id is required (a string)"),
    reason: v.optional(v.string("reason must be a string")),
  },
  (issue) => {
    if (issue.expected === "never") return "unknown field";
    if (issue.expected === '"session_id"') return "session_id is required (a string)";
    return "the body must be a JSON object {session_id, reason?}";
  },
);

export interface AckEffectsPort {
  /** Acknowledge the session's ambiguous calls durably; resolves with how many and the state after. */
  ackEffects(request: AckEffectsRequest): Promise<SessionStatus & { acknowledged: number }>;
}

export function ackEffectsRoute(port: AckEffectsPort) {
  return new Elysia({ name: "svc.ack-effects-route" }).use(withCaller).post(
    "/ack-effects",
    async ({ body, caller }) => {
      refuseUnwritableId(body.session_id, "session_id names");
      const reason = body.reason?.trim() ? body.reason.trim() : DEFAULT_ACK_REASON;
      const answer = await port.ackEffects({ sessionId: body.session_id, reason, caller });
      return json(202, { status: "acknowledged", session_id: body.session_id, ...answer });
    },
    { parse: "json", body: AckEffectsBody },
  );
}
