/**
 * svc's `POST /ack-effects` (docs/svc-pauses.md#ambiguous-effects, docs/svc.md#at-most-once): an
 * operator acknowledges the calls of a session whose effect is unknown (cut while they ran), so its
 * mutating calls are no longer refused with `ambiguous_prior_effect`. The acknowledgement is
 * durable and covers only the calls persisted up to that moment. Body strict `{session_id,
 * reason?}` (reason default `operator ack`); a reserved or unusable id is a 400. Answers 202
 * `{status: "acknowledged", session_id, acknowledged, state, pending}` (`acknowledged`: how many
 * calls it covered, 0 when none was ambiguous); 404 for no such session.
 */
import { Elysia } from "elysia";
import { json } from "../../surfaces/http/responses.ts";
import { withCaller } from "../../surfaces/http/with-caller.ts";
import { SessionReasonBody, reasonOr } from "./abort-route.ts";
import { refuseUnwritableId } from "./inject-envelope.ts";
import type { AckEffectsRequest, SessionStatus } from "./listener-port.ts";

export const DEFAULT_ACK_REASON = "operator ack";

export interface AckEffectsPort {
  /** Acknowledge the session's ambiguous calls durably; resolves with how many and the state after. */
  ackEffects(request: AckEffectsRequest): Promise<SessionStatus & { acknowledged: number }>;
}

export function ackEffectsRoute(port: AckEffectsPort) {
  return new Elysia({ name: "svc.ack-effects-route" }).use(withCaller).post(
    "/ack-effects",
    async ({ body, caller }) => {
      refuseUnwritableId(body.session_id, "session_id names");
      const reason = reasonOr(body.reason, DEFAULT_ACK_REASON);
      const answer = await port.ackEffects({ sessionId: body.session_id, reason, caller });
      return json(202, { status: "acknowledged", session_id: body.session_id, ...answer });
    },
    { parse: "json", body: SessionReasonBody },
  );
}
