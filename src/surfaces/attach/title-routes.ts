/**
 * POST /title (SessionWrite, D359): the operator names the session. The `title` key is required
 * (an omitted key is a 400: a typo must not wipe the name); `""` clears the title and the next
 * turn's prompt names the session again (D42). The answer reports what was stored (trimmed, at
 * most 60 runes) and whether the durable row was written (`persisted`; false with `detail` when
 * the write failed: still 200, the name reverts on the next rebuild).
 */
import * as v from "valibot";
import { json } from "../http/responses.ts";
import { responses } from "../http/wire-schemas.ts";
import type { AttachContext } from "./attach-context.ts";
import { Elysia } from "elysia";
import { withSession } from "./route-context.ts";

const TitleBody = v.object(
  {
    title: v.pipe(
      v.string('title is required and must be a string ("" clears the title)'),
      v.maxLength(1000, "title must be at most 1000 characters"),
    ),
  },
  "the body must be a JSON object {title}",
);
const TitleAnswer = v.object({
  session: v.string(),
  title: v.optional(v.string()),
  persisted: v.boolean(),
  detail: v.optional(v.string()),
});

export function titleRoutes(context: AttachContext) {
  const service = context.sessions;
  return new Elysia({ name: "spar.attach.title" }).use(withSession).post(
    "/title",
    async ({ body, target, caller }) => {
      const key = await service.authorize(target, caller, "write");
      const stored = await service.call({ app: key.app, sid: key.id }, caller, "write", "title", { title: body.title });
      return json(200, { session: key.id, ...stored });
    },
    {
      parse: "json",
      body: TitleBody,
      response: responses({ 200: TitleAnswer }, { body: true, extra: [404] }),
      detail: { summary: 'Name the session ("" clears the name and re-arms automatic titling)', tags: ["sessions"] },
    },
  );
}
