/**
 * The placeholder endpoints (docs/attach-api.md#placeholder-endpoints): named by the attach
 * protocol, their capability not built yet. Reads answer 200 with the bodies they would have with
 * nothing behind them; mutations answer 501 (capability missing).
 */
import { SparError } from "../../core/errors.ts";
import { json } from "../http/responses.ts";
import type { AttachContext } from "./attach-context.ts";
import { Elysia } from "elysia";
import { requestUrl } from "../http/request-url.ts";
import { withSession } from "./route-context.ts";
import * as v from "valibot";
import { responses } from "../http/wire-schemas.ts";

const ZERO_READS: Record<string, unknown> = {
  agents: { agents: [] },
  subagents: { subagents: [] },
};

const MISSING_CAPABILITIES: Record<string, string> = {
  "slash/subagent": "slash command subagent",
};

const AGENT_NAME = /^[^./\s]+$/;

const LATER = ["later"];
const ZeroRead = v.looseObject({});
const AgentEvents = v.object({
  agent: v.string(),
  parent_session_id: v.string(),
  branches: v.array(v.string()),
  events: v.array(v.unknown()),
  next_since: v.number(),
  truncated: v.boolean(),
});

export function placeholderRoutes(context: AttachContext) {
  const service = context.sessions;
  let routes = new Elysia({ name: "spar.attach.placeholders" }).use(withSession);
  for (const [suffix, zero] of Object.entries(ZERO_READS)) {
    routes = routes.get(
      `/${suffix}`,
      async ({ target, caller }) => {
        await service.authorize(target, caller, "read");
        return json(200, zero);
      },
      {
        response: responses({ 200: ZeroRead }, { extra: [404] }),
        detail: { summary: `Subagents (${suffix}): the zero body until they are built`, tags: LATER },
      },
    );
  }
  for (const [suffix, capability] of Object.entries(MISSING_CAPABILITIES)) {
    routes = routes.post(
      `/${suffix}`,
      async ({ target, caller }) => {
        await service.authorize(target, caller, "write");
        throw new SparError("not_implemented", `this daemon has no ${capability}`);
      },
      {
        response: responses({}, { body: true, extra: [404, 501] }),
        detail: { summary: `${capability}: not in this build (501)`, tags: LATER },
      },
    );
  }
  return routes
    .get(
      "/agents/:p3/events",
      async ({ params, target, caller, request }) => {
        const name = params.p3;
        if (!AGENT_NAME.test(name))
          throw new SparError("bad_request", "agent name must not contain '.', '/' or whitespace");
        const key = await service.authorize(target, caller, "read");
        const since = Number.parseInt(requestUrl(request).searchParams.get("since") ?? "0", 10);
        return json(200, {
          agent: name,
          parent_session_id: key.id,
          branches: [name, `bg.${name}`, `sub.${name}`, `remote.${name}`],
          events: [],
          next_since: Number.isSafeInteger(since) && since > 0 ? since : 0,
          truncated: false,
        });
      },
      {
        response: responses({ 200: AgentEvents }, { extra: [404] }),
        detail: { summary: "A subagent's events (none until subagents are built)", tags: LATER },
      },
    )
    .post(
      "/agents/:p3/stop",
      async ({ target, caller }) => {
        await service.authorize(target, caller, "write");
        throw new SparError("not_implemented", "this daemon has no subagent stopper");
      },
      {
        response: responses({}, { body: true, extra: [404, 501] }),
        detail: { summary: "Stop a subagent: not in this build (501)", tags: LATER },
      },
    );
}
