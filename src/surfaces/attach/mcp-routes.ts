/**
 * GET /mcp (SessionRead): `{servers: [{name, status, transport, error?, tools?: [{name,
 * description?}]}]}`, the catalog's tool servers in file order. `status` is `idle` (not started
 * yet), `starting`, `ready`, `failed` (with `error`) or `stopped`; `tools` are the server's own
 * tool names once listed (the model sees them as `<server>__<tool>`, GET /tools). `{servers: []}`
 * without a catalog (none loaded, or the echo model).
 */
import { json } from "../http/responses.ts";
import type { AttachContext } from "./attach-context.ts";
import type { RouteTable } from "./route-table.ts";

export function registerMcpRoutes(table: RouteTable, context: AttachContext): void {
  const service = context.sessions;
  table.session("GET", "mcp", async (route) => {
    await service.authorize(route, route.caller, "read");
    return json(200, { servers: context.mcp?.rows() ?? [] });
  });
}
