/**
 * `POST /resume` of svc's main listener (docs/svc.md#the-main-listener---listen,
 * docs/svc.md#questions, docs/svc-pauses.md#resume-with-the-token), keyed either by `{session_id,
 * interrupt_id, response}` or by `{token}` (never both):
 * - a question: the approver is the authenticated caller, never the payload. Answered 202
 *   `{status: "resumed", session_id, interrupt_id, outcome, state, pending}` once the session's turn
 *   after the answer has ended or parked; a refused verdict is a 400 naming the audit outcome (the
 *   question stays open), an unknown question 404, a question answered before 409 (nothing
 *   changes), an aborted or gate-paused incident 409 before anything is recorded;
 * - a gate pause's token: consumed, the pause released, no turn run: 202 `{status: "resumed",
 *   session_id, replay}`; a consumed token again is 202 with `replay: true` and changes nothing;
 *   an expired one 409 (the pause stays), an unknown one 404.
 * `ack_effects: true` acknowledges the incident's ambiguous calls first. Reserved `:mast-ops` ids
 * are refused 400.
 */
import { Elysia } from "elysia";
import * as v from "valibot";
import { SparError } from "../../core/errors.ts";
import { json } from "../../surfaces/http/responses.ts";
import { withCaller } from "../../surfaces/http/with-caller.ts";
import { RESERVED_SUFFIX } from "./inject-envelope.ts";
import type { MainListenerPort } from "./listener-port.ts";
import type { TokenResumeAnswer, TokenResumeRequest } from "../pause/session-pauses.ts";

export const ResumeBody = v.strictObject({
  session_id: v.optional(v.pipe(v.string(), v.minLength(1, "session_id must not be empty"))),
  interrupt_id: v.optional(v.pipe(v.string(), v.minLength(1, "interrupt_id must not be empty"))),
  token: v.optional(v.pipe(v.string(), v.minLength(1, "token must not be empty"))),
  response: v.optional(v.unknown()),
  ack_effects: v.optional(v.boolean("ack_effects must be true or false")),
});

export interface TokenResumePort {
  resumeByToken(request: TokenResumeRequest): Promise<TokenResumeAnswer>;
}

export const ResumeAnswer = v.object({
  status: v.literal("resumed"),
  session_id: v.string(),
  interrupt_id: v.string(),
  outcome: v.string(),
  state: v.picklist(["idle", "paused", "ambiguous"]),
  detail: v.optional(v.string()),
});

export function resumeRoute(port: MainListenerPort & TokenResumePort) {
  return new Elysia({ name: "svc.resume-route" }).use(withCaller).post(
    "/resume",
    async ({ body, caller }) => {
      const ackEffects = body.ack_effects ?? false;
      if (body.token !== undefined) {
        if (body.session_id !== undefined || body.interrupt_id !== undefined)
          throw new SparError("bad_request", "token and session_id/interrupt_id keying are mutually exclusive");
        const answer = await port.resumeByToken({
          token: body.token,
          ...(body.response === undefined ? {} : { response: body.response }),
          ackEffects,
          caller,
        });
        return json(202, { status: "resumed", ...answer });
      }
      if (body.session_id === undefined || body.interrupt_id === undefined)
        throw new SparError("bad_request", "either token, or session_id and interrupt_id, are required");
      if (body.session_id.endsWith(RESERVED_SUFFIX))
        throw new SparError(
          "bad_request",
          `session id ${JSON.stringify(body.session_id)} is reserved (${RESERVED_SUFFIX})`,
        );
      const answer = await port.resume({
        sessionId: body.session_id,
        interruptId: body.interrupt_id,
        response: body.response,
        caller,
        ...(ackEffects ? { ackEffects } : {}),
      });
      return json(202, {
        status: "resumed",
        session_id: body.session_id,
        interrupt_id: body.interrupt_id,
        ...answer,
      });
    },
    { parse: "json", body: ResumeBody },
  );
}
