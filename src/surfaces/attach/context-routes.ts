/**
 * Context reduction on the attach API (D155): GET /context (the compaction and checkpoint
 * counters, D356). POST /slash/compact and /slash/done are slash operations (slash-routes.ts).
 */
import * as v from "valibot";
import { json } from "../http/responses.ts";
import type { AttachContext } from "./attach-context.ts";
import { Elysia } from "elysia";
import { withSession } from "./route-context.ts";
import { responses } from "../http/wire-schemas.ts";

const ContextInfo = v.looseObject({
  compactions: v.number(),
  checkpoints: v.number(),
  last_task_note: v.optional(v.string()),
  chars_after_compaction: v.number(),
  total_chars_summarized: v.number(),
  digest_savings: v.optional(v.looseObject({})),
});
const CONTEXT = ["context"];

export function contextRoutes(context: AttachContext) {
  const service = context.sessions;
  return new Elysia({ name: "spar.attach.context" })
    .use(withSession)
    .get(
      "/context",
      async ({ target, caller }) => json(200, await service.call(target, caller, "read", "context", {})),
      {
        response: responses({ 200: ContextInfo }, { extra: [404] }),
        detail: { summary: "How much of the conversation was compacted", tags: CONTEXT },
      },
    );
}
