/**
 * Session management and the session routes every daemon serves: list and create (`/sessions`),
 * and per session delete, inject, wake, events, status, usage and the ACL. Each handler takes its
 * validated body, makes one call on the session service and maps the answer.
 */
import * as v from "valibot";
import { SparError } from "../../core/errors.ts";
import { isIdentified } from "../http/caller-auth.ts";
import { isValidName } from "../../core/session-key.ts";
import { IDEMPOTENCY_KEY_MAX, isIdempotencyKey } from "../../runtime/idempotent-prompt.ts";
import { requestBaseUrl } from "../http/base-url.ts";
import { json } from "../http/responses.ts";
import type { AttachContext } from "./attach-context.ts";
import type { AttachStreams } from "./attach-streams.ts";
import { eventsHandler } from "./events-route.ts";
import { Elysia } from "elysia";
import { nonEmpty } from "../http/body-guards.ts";
import { NoContent, responses } from "../http/wire-schemas.ts";
import { withSession } from "./route-context.ts";
import { withCaller } from "../http/with-caller.ts";
import { ZERO_TIME } from "../../core/zero-time.ts";

const identityList = v.optional(v.array(v.pipe(v.string(), v.maxLength(256))));

const CreateSessionBody = v.pipe(
  v.looseObject({
    viewers: identityList,
    contributors: identityList,
    sessionID: v.optional(
      v.pipe(
        v.string(),
        v.check(isValidName, "sessionID must be 1-128 letters, digits, . _ : @ - and start with a letter or digit"),
      ),
    ),
    app: v.optional(
      v.pipe(
        v.string(),
        v.check(isValidName, "app must be 1-128 letters, digits, . _ : @ - and start with a letter or digit"),
      ),
    ),
  }),
  v.check((body) => !("owner" in body), "owner cannot be set: the caller creating a session is its owner"),
);

const AclPatchBody = v.object({
  owner: v.optional(v.string("owner must be a string")),
  viewers: v.optional(v.array(v.pipe(v.string(), v.maxLength(256)), "viewers must be a list of identities")),
  contributors: v.optional(v.array(v.pipe(v.string(), v.maxLength(256)), "contributors must be a list of identities")),
});

const InjectBody = v.object({
  message: v.pipe(
    v.string("message must be a string"),
    v.check((text) => text.trim() !== "", "message must not be empty"),
  ),
  wake: v.optional(v.boolean("wake must be a boolean")),
});

const WakeBody = v.object({
  target: v.optional(v.string("target must be a string")),
  prompt: v.optional(v.string("prompt must be a string")),
});

const SessionRow = v.object({
  app: v.string(),
  user: v.string(),
  sessionID: v.string(),
  has_event_log: v.boolean(),
  status: v.picklist(["active", "idle"]),
  last_touched_at: v.string(),
  title: v.optional(v.string()),
});
const SessionList = v.object({ sessions: v.array(SessionRow) });
const Created = v.object({ app: v.string(), user: v.string(), sessionID: v.string(), url: v.string() });
const InjectAnswer = v.object({
  injected: v.literal(true),
  session: v.string(),
  woke: v.boolean(),
  prompt_id: v.string(),
  halted: v.optional(v.object({ guardrail: v.string(), reason: v.string() })),
  duplicate: v.optional(v.literal(true)),
});
const WakeAnswer = v.object({ woken: v.string(), prompt: v.string(), prompt_id: v.optional(v.string()) });
const Status = v.looseObject({
  state: v.picklist(["idle", "running", "paused"]),
  model_name: v.string(),
  turn_in_flight: v.boolean(),
  next_wake_at: v.string(),
  paused_since: v.string(),
  pause_reason: v.optional(v.string()),
  current_tool: v.optional(v.string()),
  compacting: v.optional(v.literal(true)),
});
const Usage = v.looseObject({
  overall: v.looseObject({}),
  per_model: v.optional(v.looseObject({})),
  per_turn: v.optional(v.array(v.looseObject({}))),
  digest_methods: v.optional(v.looseObject({})),
});
const Acl = v.object({ owner: v.string(), viewers: v.array(v.string()), contributors: v.array(v.string()) });
/** The event stream: Server-Sent Events (`text/event-stream`), frames described in docs/attach-api.md. */
const EventStream = v.pipe(
  v.string(),
  v.description("text/event-stream: capabilities, status-update, usage-update, then agent rows and live frames"),
);

const SESSIONS = ["sessions"];

function sessionUrl(request: Request, app: string, id: string): string {
  return `${requestBaseUrl(request)}/sessions/${encodeURIComponent(app)}/${encodeURIComponent(id)}`;
}

function idempotencyKeyOf(request: Request): string | undefined {
  const key = request.headers.get("idempotency-key") ?? undefined;
  if (key !== undefined && !isIdempotencyKey(key)) {
    throw new SparError(
      "bad_request",
      `Idempotency-Key must be 1 to ${IDEMPOTENCY_KEY_MAX} printable ASCII characters without spaces`,
    );
  }
  return key;
}

/** GET and POST /sessions. */
export function sessionListRoutes(context: AttachContext) {
  const service = context.sessions;
  return new Elysia({ name: "spar.attach.session-list" })
    .use(withCaller)
    .get(
      "/sessions",
      async ({ caller }) => {
        const sessions = (await service.list(caller)).map(({ record, active }) => ({
          app: record.app,
          user: record.owner,
          sessionID: record.id,
          has_event_log: true,
          status: active ? "active" : "idle",
          last_touched_at: record.lastTouchedAt || ZERO_TIME,
          ...(record.title ? { title: record.title } : {}),
        }));
        return json(200, { sessions });
      },
      {
        response: responses({ 200: SessionList }),
        detail: { summary: "List the sessions the caller may see", tags: SESSIONS },
      },
    )
    .post(
      "/sessions",
      async ({ body, caller, request }) => {
        if (service.multiSession && !isIdentified(caller)) {
          throw new SparError("unauthorized", "creating a session needs an authenticated caller");
        }
        const record = await service.create(caller, {
          ...(body?.app ? { app: body.app } : {}),
          ...(body?.sessionID ? { sessionID: body.sessionID } : {}),
          viewers: body?.viewers ?? [],
          contributors: body?.contributors ?? [],
        });
        return json(201, {
          app: record.app,
          user: record.owner,
          sessionID: record.id,
          url: sessionUrl(request, record.app, record.id),
        });
      },
      {
        parse: "json",
        body: v.optional(CreateSessionBody),
        response: responses({ 201: Created }, { body: true, extra: [404, 409, 501] }),
        detail: { summary: "Create a session owned by the caller", tags: SESSIONS },
      },
    );
}

/** Per-session routes: delete, inject, wake, events, status, usage, acl. */
export function sessionRoutes(context: AttachContext, listener: AttachStreams) {
  const service = context.sessions;
  return new Elysia({ name: "spar.attach.session" })
    .use(withSession)
    .delete(
      "",
      async ({ target, caller }) => {
        await service.remove(target, caller);
        return new Response(null, { status: 204 });
      },
      {
        response: responses({ 204: NoContent }, { extra: [404, 500] }),
        detail: { summary: "Delete a session (SessionAdmin)", tags: SESSIONS },
      },
    )
    .post(
      "/inject",
      async ({ body, target, caller, request }) => {
        service.refuseWhileDraining();
        const idempotencyKey = idempotencyKeyOf(request);
        const { key, result } = await service.inject(target, caller, body.message, {
          wake: body.wake ?? true,
          ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
        });
        return json(200, {
          injected: true,
          session: key.id,
          woke: result.woke,
          prompt_id: result.promptId,
          ...(result.halted ? { halted: result.halted } : {}),
          ...(result.duplicate ? { duplicate: true } : {}),
        });
      },
      {
        parse: "json",
        body: InjectBody,
        response: responses({ 200: InjectAnswer }, { body: true, extra: [404, 429, 501, 503] }),
        detail: {
          summary: "Queue a message (durable before the answer); Idempotency-Key makes a repeat a no-op",
          tags: SESSIONS,
        },
      },
    )
    .post(
      "/wake",
      async ({ body, target, caller }) => {
        service.refuseWhileDraining();
        if (body?.target !== undefined)
          throw new SparError("not_implemented", "wake targets are not routed by this daemon");
        // A blank prompt is no prompt (a bare wake), as "" always was; inject refuses a blank message.
        const prompt = body?.prompt?.trim() === "" ? undefined : body?.prompt;
        const { key, injected } = await service.wake(target, caller, prompt);
        return json(200, {
          woken: key.id,
          prompt: body?.prompt ?? "",
          ...(injected ? { prompt_id: injected.promptId } : {}),
        });
      },
      {
        parse: "json",
        body: v.optional(WakeBody),
        response: responses({ 200: WakeAnswer }, { body: true, extra: [404, 429, 501, 503] }),
        detail: { summary: "Wake the session, queueing a prompt first", tags: SESSIONS },
      },
    )
    .get("/events", ({ target, caller, request }) => eventsHandler(context, listener, { target, caller, request }), {
      response: responses({ 200: EventStream }, { extra: [404, 409, 429] }),
      detail: { summary: "The session's event stream (SSE); since or Last-Event-ID resumes", tags: SESSIONS },
    })
    .get(
      "/status",
      async ({ target, caller }) => {
        return json(200, await service.call(target, caller, "read", "status", {}));
      },
      {
        response: responses({ 200: Status }, { extra: [404] }),
        detail: { summary: "The session's state", tags: SESSIONS },
      },
    )
    .get(
      "/usage",
      async ({ target, caller }) => {
        return json(200, await service.call(target, caller, "read", "usage", {}));
      },
      {
        response: responses({ 200: Usage }, { extra: [404] }),
        detail: { summary: "Token usage and cost", tags: SESSIONS },
      },
    )
    .patch("/acl", async ({ body, target, caller }) => json(200, await service.updateAcl(target, caller, body)), {
      parse: "json",
      body: nonEmpty(AclPatchBody),
      response: responses({ 200: Acl }, { body: true, extra: [404, 500, 501] }),
      detail: { summary: "Change the ACL (SessionAdmin)", tags: SESSIONS },
    })
    .get("/acl", async ({ target, caller }) => json(200, await service.acl(target, caller)), {
      response: responses({ 200: Acl }, { extra: [404] }),
      detail: { summary: "The ACL (SessionAdmin)", tags: SESSIONS },
    });
}
