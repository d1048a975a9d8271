/**
 * Endpoints of the spec whose capability later issues wire. Reads answer 200 with their
 * zero-valued bodies (the spec's rule for an unwired provider); mutations answer 501
 * (capability missing).
 */
import { SparError } from "../../core/errors.ts";
import { json } from "../http/responses.ts";
import type { AttachContext } from "./attach-context.ts";
import type { RouteTable } from "./route-table.ts";

const ZERO_READS: Record<string, unknown> = {
  agents: { agents: [] },
  subagents: { subagents: [] },
};

const MISSING_CAPABILITIES: Record<string, string> = {
  title: "title capability",
  "slash/done": "slash command done",
  "slash/btw": "slash command btw",
  "slash/subagent": "slash command subagent",
  "slash/replan": "slash command replan",
};

const AGENT_NAME = /^[^./\s]+$/;

export function registerPlaceholderRoutes(table: RouteTable, context: AttachContext): void {
  const service = context.sessions;
  for (const [suffix, zero] of Object.entries(ZERO_READS)) {
    table.session("GET", suffix, async (route) => {
      await service.authorize(route, route.caller, "read");
      return json(200, zero);
    });
  }
  for (const [suffix, capability] of Object.entries(MISSING_CAPABILITIES)) {
    table.session("POST", suffix, async (route) => {
      await service.authorize(route, route.caller, "write");
      throw new SparError("not_implemented", `this daemon has no ${capability}`);
    });
  }
  table.session("GET", "agents/:p3/events", async (route) => {
    const name = route.params.p3 ?? "";
    if (!AGENT_NAME.test(name))
      throw new SparError("bad_request", "agent name must not contain '.', '/' or whitespace");
    const key = await service.authorize(route, route.caller, "read");
    const since = Number.parseInt(route.url.searchParams.get("since") ?? "0", 10);
    return json(200, {
      agent: name,
      parent_session_id: key.id,
      branches: [name, `bg.${name}`, `sub.${name}`, `remote.${name}`],
      events: [],
      next_since: Number.isSafeInteger(since) && since > 0 ? since : 0,
      truncated: false,
    });
  });
  table.session("POST", "agents/:p3/stop", async (route) => {
    await service.authorize(route, route.caller, "write");
    throw new SparError("not_implemented", "this daemon has no subagent stopper");
  });
}
