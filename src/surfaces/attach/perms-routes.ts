/**
 * The permission gate over HTTP: GET /perms, the /perms/stream SSE of prompts (pending ones
 * first), POST /perms/respond (approver attribution from the verified caller; 410 for a prompt
 * that expired or whose turn ended), /perms/mode (SessionAdmin), /perms/allow (SessionAdmin) and
 * /perms/deny (SessionWrite).
 */
import * as v from "valibot";
import type { PromptFrame } from "../../core/permission-gate.ts";
import { json } from "../http/responses.ts";
import { OPENING_COMMENT } from "../http/sse-stream.ts";
import type { AttachContext } from "./attach-context.ts";
import type { AttachStreams } from "./attach-streams.ts";
import { Elysia } from "elysia";
import type { Access, SessionTarget } from "../../runtime/session-service.ts";
import type { Caller } from "../http/caller-auth.ts";
import { NoContent, responses } from "../http/wire-schemas.ts";
import { verifiedIdentity, withSession } from "./route-context.ts";
import { encodeFrame } from "./sse-frames.ts";

const RespondBody = v.object({
  id: v.pipe(v.string("id must be a string"), v.minLength(1, "id must not be empty")),
  decision: v.string("decision must be a string"),
  approver: v.optional(v.string("approver must be a string")),
  reason: v.optional(v.string("reason must be a string")),
});
const ModeBody = v.object({ mode: v.string("mode must be a string") });
const PatternsBody = v.object({
  patterns: v.pipe(
    v.array(v.string(), "patterns must be a list of strings"),
    v.minLength(1, "patterns must not be empty"),
  ),
});

const PermsInfo = v.looseObject({ mode: v.string() });
const PromptStream = v.pipe(
  v.string(),
  v.description("text/event-stream of `prompt` frames: pending prompts first, then new ones"),
);
const Acknowledged = v.object({ acknowledged: v.literal(true), approver: v.optional(v.string()) });
const ModeAnswer = v.object({ previous: v.string(), mode: v.string() });
const PERMS = ["permissions"];

export function permsRoutes(context: AttachContext, listener: AttachStreams) {
  const service = context.sessions;
  const tools = async (target: SessionTarget, caller: Caller, access: Access) =>
    (await service.open(target, caller, access)).actor.tools;
  return new Elysia({ name: "spar.attach.perms" })
    .use(withSession)
    .get("/perms", async ({ target, caller }) => json(200, await service.call(target, caller, "read", "perms", {})), {
      response: responses({ 200: PermsInfo }, { extra: [404] }),
      detail: { summary: "The permission mode, patterns and pending prompts", tags: PERMS },
    })
    .get(
      "/perms/stream",
      async ({ target, caller, request }) => {
        const gated = await tools(target, caller, "read");
        const release = context.streams.admit(caller);
        let stop = () => {};
        const stream = listener.streams.open({
          ...context.subscriberBuffer,
          onClose: () => {
            release();
            stop();
          },
        });
        const send = (prompt: PromptFrame) => stream.write(encodeFrame("prompt", prompt));
        const pending = gated.gate.pending();
        if (pending.length === 0) stream.write(OPENING_COMMENT);
        for (const prompt of pending) send(prompt);
        stop = gated.prompts.listen(send);
        request.signal.addEventListener("abort", () => stream.close("client disconnected"), { once: true });
        return stream.response;
      },
      {
        response: responses({ 200: PromptStream }, { extra: [404, 429] }),
        detail: { summary: "The session's permission prompts (SSE)", tags: PERMS },
      },
    )
    .post(
      "/perms/respond",
      async ({ body, target, caller }) => {
        const who = verifiedIdentity(caller);
        const { approver } = await service.respond(target, caller, {
          id: body.id,
          decision: body.decision,
          input: {
            ...(body.approver !== undefined ? { approver: body.approver } : {}),
            ...(who !== undefined ? { verified: who } : {}),
            ...(body.reason !== undefined ? { reason: body.reason } : {}),
          },
        });
        return json(200, approver !== undefined ? { acknowledged: true, approver } : { acknowledged: true });
      },
      {
        parse: "json",
        body: RespondBody,
        response: responses({ 200: Acknowledged }, { body: true, extra: [404, 410] }),
        detail: { summary: "Answer a permission prompt", tags: PERMS },
      },
    )
    .post(
      "/perms/mode",
      async ({ body, target, caller }) => {
        const by = verifiedIdentity(caller);
        return json(
          200,
          await service.call(target, caller, "admin", "permsMode", {
            mode: body.mode,
            ...(by === undefined ? {} : { by }),
          }),
        );
      },
      {
        parse: "json",
        body: ModeBody,
        response: responses({ 200: ModeAnswer }, { body: true, extra: [404, 501] }),
        detail: { summary: "Change the session's permission mode (SessionAdmin)", tags: PERMS },
      },
    )
    .post(
      "/perms/allow",
      async ({ body, target, caller }) => {
        await service.call(target, caller, "admin", "permsAllow", { patterns: [...body.patterns] });
        return new Response(null, { status: 204 });
      },
      {
        parse: "json",
        body: PatternsBody,
        response: responses({ 204: NoContent }, { body: true, extra: [404, 501] }),
        detail: { summary: "Allow patterns for this session (SessionAdmin)", tags: PERMS },
      },
    )
    .post(
      "/perms/deny",
      async ({ body, target, caller }) => {
        await service.call(target, caller, "write", "permsDeny", { patterns: [...body.patterns] });
        return new Response(null, { status: 204 });
      },
      {
        parse: "json",
        body: PatternsBody,
        response: responses({ 204: NoContent }, { body: true, extra: [404, 501] }),
        detail: { summary: "Deny patterns for this session", tags: PERMS },
      },
    );
}
