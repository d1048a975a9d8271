/**
 * The permission gate over HTTP: GET /perms, the /perms/stream SSE of prompts (pending ones
 * first), POST /perms/respond (approver attribution from the verified caller; 410 for a prompt
 * that expired or whose turn ended), /perms/mode (SessionAdmin), /perms/allow (SessionAdmin) and
 * /perms/deny (SessionWrite).
 */
import * as v from "valibot";
import type { PromptFrame } from "../../core/permission-gate.ts";
import { json } from "../http/responses.ts";
import { OPENING_COMMENT, SseStream } from "../http/sse-stream.ts";
import type { AttachContext } from "./attach-context.ts";
import { requiredBody, verifiedIdentity } from "./route-body.ts";
import type { RouteContext, RouteTable } from "./route-table.ts";
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

export function registerPermsRoutes(table: RouteTable, context: AttachContext): void {
  const service = context.sessions;
  const tools = async (
    route: RouteContext & { app: string | undefined; sid: string },
    action: "read" | "write" | "admin",
  ) => (await service.open(route, route.caller, action)).actor.tools;

  table.session("GET", "perms", async (route) => json(200, (await tools(route, "read")).info()));

  table.session("GET", "perms/stream", async (route) => {
    const gated = await tools(route, "read");
    const release = context.streams.admit(route.caller);
    route.keepOpen();
    let stop = () => {};
    const stream = new SseStream({
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
    route.request.signal.addEventListener("abort", () => stream.close("client disconnected"), { once: true });
    return stream.response;
  });

  table.session("POST", "perms/respond", async (route) => {
    const request = await requiredBody(route, RespondBody);
    const gated = await tools(route, "write");
    const who = verifiedIdentity(route);
    const answer = await gated.respond(request.id, request.decision, {
      ...(request.approver !== undefined ? { approver: request.approver } : {}),
      ...(who !== undefined ? { verified: who } : {}),
      ...(request.reason !== undefined ? { reason: request.reason } : {}),
    });
    if (!answer.ok) throw answer.error;
    return json(
      200,
      answer.value.approver !== undefined
        ? { acknowledged: true, approver: answer.value.approver }
        : { acknowledged: true },
    );
  });

  table.session("POST", "perms/mode", async (route) => {
    const request = await requiredBody(route, ModeBody);
    const gated = await tools(route, "admin");
    const change = await gated.setMode(request.mode, verifiedIdentity(route));
    if (!change.ok) throw change.error;
    return json(200, { previous: change.value.previous, mode: change.value.mode });
  });

  table.session("POST", "perms/allow", async (route) => {
    const request = await requiredBody(route, PatternsBody);
    const added = (await tools(route, "admin")).gate.addAllow(request.patterns);
    if (!added.ok) throw added.error;
    return new Response(null, { status: 204 });
  });

  table.session("POST", "perms/deny", async (route) => {
    const request = await requiredBody(route, PatternsBody);
    const added = (await tools(route, "write")).gate.addDeny(request.patterns);
    if (!added.ok) throw added.error;
    return new Response(null, { status: 204 });
  });
}
