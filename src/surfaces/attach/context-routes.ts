/**
 * Context reduction on the attach API (D155): GET /context (the compaction counters) and
 * POST /slash/compact (summarize all but the last turn now). Thin: the actor's Compactor works.
 */
import * as v from "valibot";
import { json } from "../http/responses.ts";
import type { AttachContext } from "./attach-context.ts";
import { Elysia } from "elysia";
import { withSession } from "./route-context.ts";
import { responses } from "../http/wire-schemas.ts";

const CompactBody = v.object({ focus: v.optional(v.pipe(v.string(), v.maxLength(2000))) });

const ContextInfo = v.looseObject({
  compactions: v.number(),
  checkpoints: v.number(),
  chars_after_compaction: v.number(),
  total_chars_summarized: v.number(),
  digest_savings: v.optional(v.looseObject({})),
});
const CompactAnswer = v.object({
  summary_event_id: v.optional(v.string()),
  summary_text: v.optional(v.string()),
  duration_ms: v.number(),
  skipped: v.optional(v.literal(true)),
});
const CONTEXT = ["context"];

export function contextRoutes(context: AttachContext) {
  const service = context.sessions;
  return new Elysia({ name: "spar.attach.context" })
    .use(withSession)
    .get(
      "/context",
      async ({ target, caller }) => json(200, (await service.open(target, caller, "read")).actor.contextInfo()),
      {
        response: responses({ 200: ContextInfo }, { extra: [404] }),
        detail: { summary: "How much of the conversation was compacted", tags: CONTEXT },
      },
    )
    .post(
      "/slash/compact",
      // A summary call may take minutes with nothing on the wire: the guard lifts the idle timeout
      // while a handler runs (connection-deadlines.ts).
      async ({ body, target, caller }) => {
        const { actor } = await service.open(target, caller, "write");
        const focus = body?.focus?.trim();
        const result = await actor.compact(focus === "" ? undefined : focus);
        return json(200, {
          ...(result.eventId !== undefined ? { summary_event_id: result.eventId } : {}),
          ...(result.summary !== undefined ? { summary_text: result.summary } : {}),
          duration_ms: result.durationMs,
          ...(result.skipped ? { skipped: true } : {}),
        });
      },
      {
        parse: "json",
        body: v.optional(CompactBody),
        response: responses({ 200: CompactAnswer }, { body: true, extra: [404, 409, 500] }),
        detail: { summary: "Summarize the conversation now (everything but the last turn)", tags: CONTEXT },
      },
    );
}
