/**
 * svc's `POST /sessions/{id}/guardrails/reset`: clears a guardrail halt (a watchdog trip under
 * `enforce`, a cost ceiling) on the session, through the same runtime reset as the attach surface,
 * with its body (`{guardrail?, additional_budget_usd?}`) and its answers: 200 with the reset, 400
 * for an invalid one, 409 with a reset-shaped body when it would trip again, 404 for no such
 * session. A reserved or unusable id is a 400. The daemon behind it is a port.
 */
import { Elysia } from "elysia";
import * as v from "valibot";
import type { ResetRequest } from "../../core/guardrails.ts";
import type { ResetOutcome } from "../../runtime/session-guards.ts";
import { ResetBody, resetRequest } from "../../surfaces/attach/guardrail-routes.ts";
import type { Caller } from "../../surfaces/http/caller-auth.ts";
import { json } from "../../surfaces/http/responses.ts";
import { withCaller } from "../../surfaces/http/with-caller.ts";
import { refuseUnwritableId } from "./inject-envelope.ts";

export interface GuardrailResetRequest {
  sessionId: string;
  request: ResetRequest;
  caller: Caller;
}

export interface GuardrailResetPort {
  /** Reset the session's tripped guardrails; a cleared session runs what waited in its inbox. */
  resetGuardrails(request: GuardrailResetRequest): Promise<ResetOutcome>;
}

export function guardrailsRoute(port: GuardrailResetPort) {
  return new Elysia({ name: "svc.guardrails-route" }).use(withCaller).post(
    "/sessions/:id/guardrails/reset",
    async ({ params, body, caller }) => {
      refuseUnwritableId(params.id, "the path names");
      return json(200, await port.resetGuardrails({ sessionId: params.id, request: resetRequest(body), caller }));
    },
    { parse: "json", params: v.object({ id: v.string() }), body: v.optional(ResetBody) },
  );
}
