/**
 * GET /tools (SessionRead): `{tools: [{name, description, source, server?}]}`, the tools this
 * session's model is offered, from the daemon's tool catalog: the builtins, then the tool servers'
 * tools as `<server>__<tool>` with `source: "mcp"` and `server` (listed once the server has
 * started). Empty without a catalog.
 */
import { json } from "../http/responses.ts";
import type { AttachContext } from "./attach-context.ts";
import type { RouteTable } from "./route-table.ts";

export function registerToolsRoutes(table: RouteTable, context: AttachContext): void {
  const service = context.sessions;
  table.session("GET", "tools", async (route) => {
    await service.authorize(route, route.caller, "read");
    return json(200, { tools: context.tools?.list() ?? [] });
  });
}
