/**
 * Session management and the write and read routes issue-2 daemons serve: list, create,
 * delete, inject, wake, status, usage, acl. Each handler parses, asks the host, maps the result.
 */
import * as v from "valibot";
import { SparError } from "../../core/errors.ts";
import { normalizeIdentities } from "../../core/identities.ts";
import { isIdentified } from "../http/caller-auth.ts";
import { isValidName } from "../../core/session-key.ts";
import { ZERO_TIME } from "../../runtime/session-host.ts";
import { IDEMPOTENCY_KEY_MAX, isIdempotencyKey } from "../../runtime/idempotent-prompt.ts";
import { requestBaseUrl } from "../http/base-url.ts";
import { json } from "../http/responses.ts";
import { validate } from "../http/request-body.ts";
import type { AttachContext } from "./attach-context.ts";
import { eventsHandler } from "./events-route.ts";
import { optionalBody, rawBody, requiredBody } from "./route-body.ts";
import type { RouteTable } from "./route-table.ts";

const identityList = v.optional(v.array(v.pipe(v.string(), v.maxLength(256))));

const CreateSessionBody = v.object({
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
});

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

function refuseDuringShutdown(context: AttachContext): void {
  if (context.host.shuttingDown)
    throw new SparError("shutting_down", "daemon is shutting down; retry against its successor");
}

function sessionUrl(request: Request, app: string, id: string): string {
  return `${requestBaseUrl(request)}/sessions/${encodeURIComponent(app)}/${encodeURIComponent(id)}`;
}

export function registerSessionRoutes(table: RouteTable, context: AttachContext): void {
  const host = context.host;

  table.add("GET", "/sessions", async (route) => {
    const sessions = (await host.list(route.caller)).map(({ record, active }) => ({
      app: record.app,
      user: record.owner,
      sessionID: record.id,
      has_event_log: true,
      status: active ? "active" : "idle",
      last_touched_at: record.lastTouchedAt || ZERO_TIME,
      ...(record.title ? { title: record.title } : {}),
    }));
    return json(200, { sessions });
  });

  table.add("POST", "/sessions", async (route) => {
    const raw = await rawBody(route);
    if (raw !== undefined && typeof raw === "object" && raw !== null && "owner" in raw) {
      throw new SparError("bad_request", "owner cannot be set: the caller creating a session is its owner");
    }
    const request =
      raw === undefined
        ? {}
        : await (async () => {
            const valid = validate(CreateSessionBody, raw);
            if (!valid.ok) throw valid.error;
            return valid.value;
          })();
    if (!host.config.multiSession) {
      throw new SparError(
        "not_implemented",
        "this daemon has no session factory; start it with --multi-session (or attach.multi_session.enabled) to create sessions",
      );
    }
    const caller = route.caller;
    if (!isIdentified(caller)) throw new SparError("unauthorized", "creating a session needs an authenticated caller");
    const app = request.app ?? host.config.app;
    let record: Awaited<ReturnType<typeof host.createSession>>;
    try {
      record = await host.createSession({
        app,
        ...(request.sessionID ? { id: request.sessionID } : {}),
        owner: caller.identity,
        viewers: normalizeIdentities(request.viewers ?? []),
        contributors: normalizeIdentities(request.contributors ?? []),
      });
    } catch (error) {
      // A taken id the caller cannot see answers as every invisible session does (masked 404).
      if (error instanceof SparError && error.code === "conflict" && request.sessionID)
        await host.authorize(app, request.sessionID, caller, "read");
      throw error;
    }
    return json(201, {
      app: record.app,
      user: record.owner,
      sessionID: record.id,
      url: sessionUrl(route.request, record.app, record.id),
    });
  });

  table.session("DELETE", "", async (route) => {
    await host.deleteSession(route.app, route.sid, route.caller);
    return new Response(null, { status: 204 });
  });

  table.session("POST", "inject", async (route) => {
    const request = await requiredBody(route, InjectBody);
    refuseDuringShutdown(context);
    const idempotencyKey = route.request.headers.get("idempotency-key") ?? undefined;
    if (idempotencyKey !== undefined && !isIdempotencyKey(idempotencyKey)) {
      throw new SparError(
        "bad_request",
        `Idempotency-Key must be 1 to ${IDEMPOTENCY_KEY_MAX} printable ASCII characters without spaces`,
      );
    }
    const key = await host.authorize(route.app, route.sid, route.caller, "write");
    const actor = await host.actor(key);
    const result = await actor.inject(
      request.message,
      request.wake ?? true,
      idempotencyKey === undefined ? {} : { idempotencyKey },
    );
    return json(200, {
      injected: true,
      session: key.id,
      woke: result.woke,
      prompt_id: result.promptId,
      ...(result.halted ? { halted: result.halted } : {}),
      ...(result.duplicate ? { duplicate: true } : {}),
    });
  });

  table.session("POST", "wake", async (route) => {
    const request = (await optionalBody(route, WakeBody)) ?? {};
    refuseDuringShutdown(context);
    if (request.target !== undefined)
      throw new SparError("not_implemented", "wake targets are not routed by this daemon");
    const key = await host.authorize(route.app, route.sid, route.caller, "write");
    const actor = await host.actor(key);
    // A blank prompt is no prompt (a bare wake), as "" always was; inject refuses a blank message.
    const injected = await actor.wake(request.prompt?.trim() === "" ? undefined : request.prompt);
    return json(200, {
      woken: key.id,
      prompt: request.prompt ?? "",
      ...(injected ? { prompt_id: injected.promptId } : {}),
    });
  });

  table.session("GET", "events", (route) => eventsHandler(context, route));

  table.session("GET", "status", async (route) => {
    const actor = await host.actor(await host.authorize(route.app, route.sid, route.caller, "read"));
    return json(200, actor.status());
  });

  table.session("GET", "usage", async (route) => {
    const actor = await host.actor(await host.authorize(route.app, route.sid, route.caller, "read"));
    return json(200, await actor.usageInfo());
  });

  table.session("PATCH", "acl", async (route) => {
    const patch = await requiredBody(route, AclPatchBody);
    if (!host.config.multiSession)
      throw new SparError("not_implemented", "sessions carry ACLs only with --multi-session");
    const key = await host.authorize(route.app, route.sid, route.caller, "admin");
    const stored = await host.updateAcl(key, {
      ...(patch.owner !== undefined ? { owner: patch.owner } : {}),
      ...(patch.viewers !== undefined ? { viewers: normalizeIdentities(patch.viewers) } : {}),
      ...(patch.contributors !== undefined ? { contributors: normalizeIdentities(patch.contributors) } : {}),
    });
    return json(200, stored);
  });

  table.session("GET", "acl", async (route) => {
    const record = await host.record(await host.authorize(route.app, route.sid, route.caller, "admin"));
    if (!record) throw new SparError("not_found", `session not found: ${route.sid}`);
    return json(200, { owner: record.owner, viewers: record.viewers, contributors: record.contributors });
  });
}
