/**
 * Session management and the write and read routes issue-2 daemons serve: list, create,
 * delete, inject, wake, status, usage, acl. Each handler parses, asks the host, maps the result.
 */
import * as v from "valibot";
import { SparError } from "../../core/errors.ts";
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

function sessionUrl(request: Request, app: string, id: string): string {
  return `${requestBaseUrl(request)}/sessions/${encodeURIComponent(app)}/${encodeURIComponent(id)}`;
}

export function registerSessionRoutes(table: RouteTable, context: AttachContext): void {
  const service = context.sessions;

  table.add("GET", "/sessions", async (route) => {
    const sessions = (await service.list(route.caller)).map(({ record, active }) => ({
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
    const caller = route.caller;
    if (service.multiSession && !isIdentified(caller)) {
      throw new SparError("unauthorized", "creating a session needs an authenticated caller");
    }
    const record = await service.create(caller, {
      ...(request.app ? { app: request.app } : {}),
      ...(request.sessionID ? { sessionID: request.sessionID } : {}),
      viewers: request.viewers ?? [],
      contributors: request.contributors ?? [],
    });
    return json(201, {
      app: record.app,
      user: record.owner,
      sessionID: record.id,
      url: sessionUrl(route.request, record.app, record.id),
    });
  });

  table.session("DELETE", "", async (route) => {
    await service.remove(route, route.caller);
    return new Response(null, { status: 204 });
  });

  table.session("POST", "inject", async (route) => {
    const request = await requiredBody(route, InjectBody);
    service.refuseWhileDraining();
    const idempotencyKey = route.request.headers.get("idempotency-key") ?? undefined;
    if (idempotencyKey !== undefined && !isIdempotencyKey(idempotencyKey)) {
      throw new SparError(
        "bad_request",
        `Idempotency-Key must be 1 to ${IDEMPOTENCY_KEY_MAX} printable ASCII characters without spaces`,
      );
    }
    const { key, result } = await service.inject(route, route.caller, request.message, {
      wake: request.wake ?? true,
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
  });

  table.session("POST", "wake", async (route) => {
    const request = (await optionalBody(route, WakeBody)) ?? {};
    service.refuseWhileDraining();
    if (request.target !== undefined)
      throw new SparError("not_implemented", "wake targets are not routed by this daemon");
    // A blank prompt is no prompt (a bare wake), as "" always was; inject refuses a blank message.
    const { key, injected } = await service.wake(
      route,
      route.caller,
      request.prompt?.trim() === "" ? undefined : request.prompt,
    );
    return json(200, {
      woken: key.id,
      prompt: request.prompt ?? "",
      ...(injected ? { prompt_id: injected.promptId } : {}),
    });
  });

  table.session("GET", "events", (route) => eventsHandler(context, route));

  table.session("GET", "status", async (route) => {
    const { actor } = await service.open(route, route.caller, "read");
    return json(200, actor.status());
  });

  table.session("GET", "usage", async (route) => {
    const { actor } = await service.open(route, route.caller, "read");
    return json(200, await actor.usageInfo());
  });

  table.session("PATCH", "acl", async (route) => {
    const patch = await requiredBody(route, AclPatchBody);
    return json(200, await service.updateAcl(route, route.caller, patch));
  });

  table.session("GET", "acl", async (route) => {
    return json(200, await service.acl(route, route.caller));
  });
}
