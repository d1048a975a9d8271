/**
 * GET /tool-results/{call_id}/raw (D354): a tool call's result as the tool returned it, for a
 * result the model read as a digest and for any other (then the same as what the model read).
 * Read access to the session, through the same authorization as every session route; the row is
 * read from the log, so the raw result survives restarts.
 */
import * as v from "valibot";
import { Elysia } from "elysia";
import { SparError } from "../../core/errors.ts";
import { json } from "../http/responses.ts";
import { responses } from "../http/wire-schemas.ts";
import type { AttachContext } from "./attach-context.ts";
import { withSession } from "./route-context.ts";

const RawResult = v.object({
  call_id: v.string(),
  name: v.string(),
  is_error: v.boolean(),
  method: v.optional(v.string()),
  raw_bytes: v.optional(v.number()),
  digest_bytes: v.optional(v.number()),
  output: v.looseObject({}),
});

/** Call ids are the model's or ours (UUIDs): printable, no slash, bounded. */
const CALL_ID = /^[\x21-\x7e]{1,200}$/;

export function toolResultRoutes(context: AttachContext) {
  const service = context.sessions;
  return new Elysia({ name: "spar.attach.tool-results" }).use(withSession).get(
    "/tool-results/:callId/raw",
    async ({ params, target, caller }) => {
      const key = await service.authorize(target, caller, "read");
      const callId = params.callId;
      if (!CALL_ID.test(callId))
        throw new SparError("bad_request", "call_id must be 1 to 200 printable characters without spaces");
      const { event } = await service.call({ app: key.app, sid: key.id }, caller, "read", "toolResult", { callId });
      if (event === null)
        throw new SparError("not_found", `no tool result with call_id ${JSON.stringify(callId)} in this session`);
      const digest = event.digest;
      return json(200, {
        call_id: event.callId,
        name: event.name,
        is_error: event.isError,
        ...(digest === undefined
          ? {}
          : { method: digest.method, raw_bytes: digest.rawBytes, digest_bytes: digest.digestBytes }),
        output: digest?.raw ?? event.output,
      });
    },
    {
      response: responses({ 200: RawResult }, { extra: [400, 404] }),
      detail: {
        summary: "A tool call's result as the tool returned it (before any digest)",
        tags: ["context"],
      },
    },
  );
}
