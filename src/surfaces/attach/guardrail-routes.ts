/**
 * Guardrails over HTTP: GET /guardrails (watchdog, cost ceiling with `would_retrip`, `halted`)
 * and POST /guardrails/reset (SessionWrite; 400 on an unknown guardrail, a negative budget or a
 * budget on a watchdog reset; 409 with a reset-shaped body when the reset would trip again).
 * A `caller` field in the body is ignored: the audit row names the verified caller.
 */
import * as v from "valibot";
import { json } from "../http/responses.ts";
import type { AttachContext } from "./attach-context.ts";
import { optionalBody, verifiedIdentity } from "./route-body.ts";
import type { RouteTable } from "./route-table.ts";

const ResetBody = v.object({
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

export function registerGuardrailRoutes(table: RouteTable, context: AttachContext): void {
  const service = context.sessions;

  table.session("GET", "guardrails", async (route) => {
    const actor = (await service.open(route, route.caller, "read")).actor;
    return json(200, actor.guards.info());
  });

  table.session("POST", "guardrails/reset", async (route) => {
    const body = await optionalBody(route, ResetBody);
    const actor = (await service.open(route, route.caller, "write")).actor;
    const request = {
      ...(body?.guardrail !== undefined ? { guardrail: body.guardrail } : {}),
      ...(body?.additional_budget_usd !== undefined ? { additionalBudgetUsd: body.additional_budget_usd } : {}),
    };
    return json(200, await actor.resetGuardrails(request, verifiedIdentity(route)));
  });
}
