/**
 * Subagents on the attach API (D351): GET /subagents (the roster, each with its granted tools),
 * GET /agents (the session's instances), GET /agents/{name}/events (an instance family's rows,
 * paged) and POST /agents/{name}/stop; the background launch is a slash operation
 * (slash-routes.ts). Thin: the session's SessionSubagents does the work.
 */
import * as v from "valibot";
import { Elysia } from "elysia";
import { SparError } from "../../core/errors.ts";
import { grants, LOOP_CONTROL_TOOLS, type SubagentSpec } from "../../core/subagents.ts";
import type { ToolInfo } from "../../core/tool-catalog.ts";
import { requestUrl } from "../http/request-url.ts";
import { json } from "../http/responses.ts";
import { responses } from "../http/wire-schemas.ts";
import type { AttachContext } from "./attach-context.ts";
import { legacyRow } from "./legacy-event.ts";
import { withSession } from "./route-context.ts";

/** Agent events page: default and cap of `limit`. */
const DEFAULT_LIMIT = 500;
const MAX_LIMIT = 5000;

const AGENT_NAME = /^[^./\s]+$/;

const Roster = v.object({ subagents: v.array(v.looseObject({ name: v.string(), modes: v.array(v.string()) })) });
const Instances = v.object({
  agents: v.array(v.looseObject({ id: v.string(), name: v.string(), status: v.string() })),
});
const AgentEvents = v.object({
  agent: v.string(),
  parent_session_id: v.string(),
  branches: v.array(v.string()),
  events: v.array(v.unknown()),
  next_since: v.number(),
  truncated: v.boolean(),
});
const StopAnswer = v.object({ agent: v.string(), stopped: v.boolean(), status: v.string(), session: v.string() });
const TAGS = ["subagents"];

export function subagentRoutes(context: AttachContext) {
  const service = context.sessions;
  return new Elysia({ name: "spar.attach.subagents" })
    .use(withSession)
    .get(
      "/subagents",
      async ({ target, caller }) => {
        const { actor } = await service.open(target, caller, "read");
        const tools = context.tools?.list() ?? [];
        return json(200, {
          subagents: actor.subagents.roster.map((spec) => rosterRow(spec, tools, context.daemon.model)),
        });
      },
      {
        response: responses({ 200: Roster }, { extra: [404] }),
        detail: { summary: "The configured subagents, each with the tools it is granted", tags: TAGS },
      },
    )
    .get(
      "/agents",
      async ({ target, caller }) => {
        const { key, actor } = await service.open(target, caller, "read");
        const descriptions = new Map(actor.subagents.roster.map((spec) => [spec.name, spec.description]));
        const agents = actor.subagents.list().map((instance) => ({
          id: instance.label,
          name: instance.name,
          description: descriptions.get(instance.name) ?? "",
          status: instance.status,
          mode: instance.mode,
          started_at: instance.startedAt,
          parent_session_id: key.id,
          ...(instance.lastReport === undefined ? {} : { last_report: instance.lastReport }),
        }));
        return json(200, { agents });
      },
      {
        response: responses({ 200: Instances }, { extra: [404] }),
        detail: { summary: "The session's subagent instances, running and finished", tags: TAGS },
      },
    )
    .get(
      "/agents/:p3/events",
      async ({ params, target, caller, request }) => {
        const name = params.p3;
        if (!AGENT_NAME.test(name))
          throw new SparError("bad_request", "agent name must not contain '.', '/' or whitespace");
        const { key, actor } = await service.open(target, caller, "read");
        const query = requestUrl(request).searchParams;
        const since = cursor(query.get("since"), 0);
        const limit = Math.min(MAX_LIMIT, cursor(query.get("limit"), DEFAULT_LIMIT) || DEFAULT_LIMIT);
        const page = await actor.subagents.events(name, since, limit);
        return json(200, {
          agent: name,
          parent_session_id: key.id,
          branches: page.branches,
          events: page.events.map(legacyRow),
          next_since: page.nextSince,
          truncated: page.truncated,
        });
      },
      {
        response: responses({ 200: AgentEvents }, { extra: [400, 404] }),
        detail: { summary: "A subagent's rows from the session's log, paged", tags: TAGS },
      },
    )
    .post(
      "/agents/:p3/stop",
      async ({ params, target, caller }) => {
        const { key, actor } = await service.open(target, caller, "write");
        const outcome = await actor.subagents.stop(params.p3);
        if (outcome === undefined)
          throw new SparError(
            "not_found",
            `no subagent named ${JSON.stringify(params.p3)} was started in this session`,
          );
        return json(200, { agent: params.p3, stopped: outcome.stopped, status: outcome.status, session: key.id });
      },
      {
        response: responses({ 200: StopAnswer }, { body: true, extra: [404] }),
        detail: { summary: "Stop a running subagent (stopped:false once it had finished)", tags: TAGS },
      },
    );
}

/** A roster entry as /subagents lists it: its granted tools in the /tools row shape, sorted. */
function rosterRow(spec: SubagentSpec, tools: readonly ToolInfo[], daemonModel: string): Record<string, unknown> {
  const granted = tools
    .filter((tool) => tool.source !== "subagent" && !LOOP_CONTROL_TOOLS.has(tool.name) && grants(spec, tool.name))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((tool) => ({
      name: tool.name,
      description: tool.description,
      source: tool.source,
      ...(tool.server === undefined ? {} : { server: tool.server }),
    }));
  return {
    name: spec.name,
    description: spec.description,
    model: spec.model?.name ?? daemonModel,
    root: spec.root,
    modes: spec.parentTool ? ["sync", "async"] : ["async"],
    ...(granted.length === 0 ? {} : { tools: granted }),
  };
}

/** A non-negative integer query value; absent or not one (as a garbage `since` on /events): `fallback`. */
function cursor(value: string | null, fallback: number): number {
  const parsed = Number(value ?? "");
  return value !== null && value !== "" && Number.isSafeInteger(parsed) && parsed >= 0 ? parsed : fallback;
}
