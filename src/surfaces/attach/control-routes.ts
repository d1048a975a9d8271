/**
 * Turn control: POST /interrupt (hold by default; `X-Interrupted: nothing-in-flight` when idle),
 * POST /pause and POST /resume (continue, steer with text, abandon; 503 while shutting down).
 */
import * as v from "valibot";
import { SparError } from "../../core/errors.ts";
import { json } from "../http/responses.ts";
import type { AttachContext } from "./attach-context.ts";
import { Elysia } from "elysia";
import { responses } from "../http/wire-schemas.ts";
import { verifiedIdentity, withSession } from "./route-context.ts";

const InterruptBody = v.object({
  hold: v.optional(v.boolean("hold must be a boolean")),
  stop_subagents: v.optional(v.boolean("stop_subagents must be a boolean")),
});

const PauseBody = v.object({ reason: v.optional(v.pipe(v.string("reason must be a string"), v.maxLength(500))) });

const ResumeBody = v.object({
  mode: v.optional(v.picklist(["continue", "steer", "abandon"], "mode must be continue, steer or abandon")),
  steer: v.optional(v.string("steer must be a string")),
});

const InterruptAnswer = v.object({
  interrupted: v.boolean(),
  paused: v.boolean(),
  running_subagents: v.array(v.object({ name: v.string(), id: v.string() })),
  stopped_subagents: v.array(v.object({ name: v.string(), id: v.string() })),
  session: v.string(),
});
const PauseAnswer = v.object({
  paused: v.literal(true),
  transitioned: v.boolean(),
  state: v.literal("paused"),
  paused_since: v.string(),
  pause_reason: v.string(),
  session: v.string(),
});
const ResumeAnswer = v.object({ resumed: v.boolean(), mode: v.string(), state: v.string(), session: v.string() });
const CONTROL = ["turn control"];

export function controlRoutes(context: AttachContext) {
  const service = context.sessions;
  return new Elysia({ name: "spar.attach.control" })
    .use(withSession)
    .post(
      "/interrupt",
      async ({ body, target, caller }) => {
        const { key, result, running, stopped } = await service.interrupt(
          target,
          caller,
          body?.hold ?? true,
          verifiedIdentity(caller),
          body?.stop_subagents ?? false,
        );
        const headers: Record<string, string> = result.interrupted ? {} : { "x-interrupted": "nothing-in-flight" };
        const answer = {
          interrupted: result.interrupted,
          paused: result.paused,
          running_subagents: running,
          stopped_subagents: stopped,
          session: key.id,
        };
        return json(200, answer, headers);
      },
      {
        parse: "json",
        body: v.optional(InterruptBody),
        response: responses({ 200: InterruptAnswer }, { body: true, extra: [404, 412] }),
        detail: { summary: "Cancel the turn in flight and (hold, the default) park the session", tags: CONTROL },
      },
    )
    .post(
      "/pause",
      async ({ body, target, caller }) => {
        const { key, transitioned, status } = await service.pause(target, caller, body?.reason);
        return json(200, {
          paused: true,
          transitioned,
          state: "paused",
          paused_since: status.paused_since,
          pause_reason: status.pause_reason ?? "",
          session: key.id,
        });
      },
      {
        parse: "json",
        body: v.optional(PauseBody),
        response: responses({ 200: PauseAnswer }, { body: true, extra: [404, 501] }),
        detail: { summary: "Park the session (a running turn finishes)", tags: CONTROL },
      },
    )
    .post(
      "/resume",
      async ({ body, target, caller }) => {
        service.refuseWhileDraining();
        const mode = body?.mode ?? "continue";
        if (mode === "steer" && (body?.steer ?? "").trim() === "")
          throw new SparError("bad_request", "steer mode needs the steer text");
        const { key, resumed, state } = await service.resume(target, caller, mode, body?.steer);
        return json(200, { resumed, mode, state, session: key.id });
      },
      {
        parse: "json",
        body: v.optional(ResumeBody),
        response: responses({ 200: ResumeAnswer }, { body: true, extra: [404, 501, 503] }),
        detail: { summary: "Release the park: continue, steer with text, or abandon what was queued", tags: CONTROL },
      },
    );
}
