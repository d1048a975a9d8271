/**
 * `POST /resume` of svc's main listener (spec: Endpoints; Verdict payload): `{session_id,
 * interrupt_id, response}` answers a parked question. The approver is the authenticated caller,
 * never the payload. Answered 202 `{status: "resumed", session_id, interrupt_id, outcome, state}`
 * once the session's turn after the answer has ended or parked; a refused verdict is a 400 naming
 * the audit outcome (the question stays open), an unknown question 404, a question answered
 * before 409 (nothing changes). Reserved `:mast-ops` ids are refused 400.
 */
import { Elysia } from "elysia";
import * as v from "valibot";
import { SparError } from "../../core/errors.ts";
import { json } from "../../surfaces/http/responses.ts";
import { withCaller } from "../../surfaces/http/with-caller.ts";
import { RESERVED_SUFFIX } from "./inject-envelope.ts";
import type { MainListenerPort } from "./listener-port.ts";

export const ResumeBody = v.strictObject({
  session_id: v.pipe(v.string(), v.minLength(1, "session_id must not be empty")),
  interrupt_id: v.pipe(v.string(), v.minLength(1, "interrupt_id must not be empty")),
  response: v.unknown(),
});

export const ResumeAnswer = v.object({
  status: v.literal("resumed"),
  session_id: v.string(),
  interrupt_id: v.string(),
  outcome: v.string(),
  state: v.picklist(["idle", "paused", "ambiguous"]),
  detail: v.optional(v.string()),
});

export function resumeRoute(port: MainListenerPort) {
  return new Elysia({ name: "svc.resume-route" }).use(withCaller).post(
    "/resume",
    async ({ body, caller }) => {
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
