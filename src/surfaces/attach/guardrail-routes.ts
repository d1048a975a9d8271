/**
 * Guardrails over HTTP: GET /guardrails (watchdog, cost ceiling with `would_retrip`, `halted`)
 * and POST /guardrails/reset (SessionWrite; 400 on an unknown guardrail, a negative budget or a
 * budget on a watchdog reset; 409 with a reset-shaped body when the reset would trip again).
 * A `caller` field in the body is ignored: the audit row names the verified caller.
 */
import * as v from "valibot";
import type { ResetRequest } from "../../core/guardrails.ts";
import { json } from "../http/responses.ts";
import type { AttachContext } from "./attach-context.ts";
import { Elysia } from "elysia";
import { responses } from "../http/wire-schemas.ts";
import { verifiedIdentity, withSession } from "./route-context.ts";

/** The body of a guardrail reset (the attach surface's and svc's main listener's). */
export const ResetBody = v.object({
  guardrail: v.optional(
    v.picklist(["watchdog", "cost_ceiling", "all"], "guardrail must be one of watchdog, cost_ceiling, all"),
  ),
  additional_budget_usd: v.optional(
    v.pipe(
      v.number("additional_budget_usd must be a number"),
      v.finite("additional_budget_usd must be finite"),
      v.minValue(0, "additional_budget_usd must not be negative"),
    ),
  ),
});

/** A reset body as the runtime's request. */
export function resetRequest(body: v.InferOutput<typeof ResetBody> | undefined): ResetRequest {
  return {
    ...(body?.guardrail !== undefined ? { guardrail: body.guardrail } : {}),
    ...(body?.additional_budget_usd !== undefined ? { additionalBudgetUsd: body.additional_budget_usd } : {}),
  };
}

const GuardrailsInfo = v.looseObject({
  watchdog: v.looseObject({}),
  cost_ceiling: v.looseObject({}),
  halted: v.unknown(),
});
export const ResetAnswer = v.looseObject({
  reset: v.array(v.string()),
  budget_added_usd: v.number(),
  guardrails: GuardrailsInfo,
  message: v.string(),
});
const GUARDRAILS = ["guardrails"];

export function guardrailRoutes(context: AttachContext) {
  const service = context.sessions;
  return new Elysia({ name: "spar.attach.guardrails" })
    .use(withSession)
    .get(
      "/guardrails",
      async ({ target, caller }) => json(200, await service.call(target, caller, "read", "guardrails", {})),
      {
        response: responses({ 200: GuardrailsInfo }, { extra: [404] }),
        detail: { summary: "The watchdog and cost ceiling state", tags: GUARDRAILS },
      },
    )
    .post(
      "/guardrails/reset",
      async ({ body, target, caller }) => {
        return json(200, await service.resetGuardrails(target, caller, resetRequest(body), verifiedIdentity(caller)));
      },
      {
        parse: "json",
        body: v.optional(ResetBody),
        response: responses({ 200: ResetAnswer, 409: ResetAnswer }, { body: true, extra: [404, 501] }),
        detail: { summary: "Reset tripped guardrails, adding budget (409 when it would trip again)", tags: GUARDRAILS },
      },
    );
}
