/**
 * Turn control: POST /interrupt (hold by default; `X-Interrupted: nothing-in-flight` when idle),
 * POST /pause and POST /resume (continue, steer with text, abandon; 503 while shutting down).
 */
import * as v from "valibot";
import { SparError } from "../../core/errors.ts";
import { json } from "../http/responses.ts";
import type { AttachContext } from "./attach-context.ts";
import { optionalBody, verifiedIdentity } from "./route-body.ts";
import type { RouteTable } from "./route-table.ts";

const InterruptBody = v.object({
  hold: v.optional(v.boolean("hold must be a boolean")),
  stop_subagents: v.optional(v.boolean("stop_subagents must be a boolean")),
});

const PauseBody = v.object({ reason: v.optional(v.pipe(v.string("reason must be a string"), v.maxLength(500))) });

const ResumeBody = v.object({
  mode: v.optional(v.picklist(["continue", "steer", "abandon"], "mode must be continue, steer or abandon")),
  steer: v.optional(v.string("steer must be a string")),
});

export function registerControlRoutes(table: RouteTable, context: AttachContext): void {
  const service = context.sessions;

  table.session("POST", "interrupt", async (route) => {
    const body = (await optionalBody(route, InterruptBody)) ?? {};
    const { key, result } = await service.interrupt(route, route.caller, body.hold ?? true, verifiedIdentity(route));
    const headers: Record<string, string> = result.interrupted ? {} : { "x-interrupted": "nothing-in-flight" };
    return json(
      200,
      {
        interrupted: result.interrupted,
        paused: result.paused,
        running_subagents: [],
        stopped_subagents: [],
        session: key.id,
      },
      headers,
    );
  });

  table.session("POST", "pause", async (route) => {
    const body = (await optionalBody(route, PauseBody)) ?? {};
    const { key, transitioned, status } = await service.pause(route, route.caller, body.reason);
    return json(200, {
      paused: true,
      transitioned,
      state: "paused",
      paused_since: status.paused_since,
      pause_reason: status.pause_reason ?? "",
      session: key.id,
    });
  });

  table.session("POST", "resume", async (route) => {
    // Refused while draining before the body is even read (D48).
    service.refuseWhileDraining();
    const body = (await optionalBody(route, ResumeBody)) ?? {};
    const mode = body.mode ?? "continue";
    if (mode === "steer" && (body.steer ?? "").trim() === "")
      throw new SparError("bad_request", "steer mode needs the steer text");
    const { key, resumed, state } = await service.resume(route, route.caller, mode, body.steer);
    return json(200, { resumed, mode, state, session: key.id });
  });
}
