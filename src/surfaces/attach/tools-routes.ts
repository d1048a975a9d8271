/**
 * GET /tools (SessionRead): `{tools: [{name, description, source, server?, read_only?}]}`, the tools this
 * session's model is offered, from the daemon's tool catalog: the builtins, then the tool servers'
 * tools as `<server>__<tool>` with `source: "mcp"` and `server` (listed once the server has
 * started). Empty without a catalog.
 */
import type { ToolInfo } from "../../core/tool-catalog.ts";
import { json } from "../http/responses.ts";
import type { AttachContext } from "./attach-context.ts";
import { Elysia } from "elysia";
import { withSession } from "./route-context.ts";
import * as v from "valibot";
import { responses } from "../http/wire-schemas.ts";

/** A catalog row in its wire spelling. */
function toolRow(tool: ToolInfo): Record<string, unknown> {
  const row: Record<string, unknown> = { name: tool.name, description: tool.description, source: tool.source };
  if (tool.server !== undefined) row.server = tool.server;
  if (tool.readOnly !== undefined) row.read_only = tool.readOnly;
  return row;
}

export function toolsRoutes(context: AttachContext) {
  const service = context.sessions;
  return new Elysia({ name: "spar.attach.tools" }).use(withSession).get(
    "/tools",
    async ({ target, caller }) => {
      await service.authorize(target, caller, "read");
      return json(200, { tools: (context.tools?.list() ?? []).map(toolRow) });
    },
    {
      response: responses(
        {
          200: v.object({
            tools: v.array(v.looseObject({ name: v.string(), description: v.string(), source: v.string() })),
          }),
        },
        { extra: [404] },
      ),
      detail: { summary: "The tools the model is offered", tags: ["tools"] },
    },
  );
}
