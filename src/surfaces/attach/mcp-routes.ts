/**
 * GET /mcp (SessionRead): `{servers: [{name, status, transport, error?, tools?: [{name,
 * description?}]}]}`, the catalog's tool servers in file order. `status` is `idle` (not started
 * yet), `starting`, `ready`, `failed` (with `error`) or `stopped`; `tools` are the server's own
 * tool names once listed (the model sees them as `<server>__<tool>`, GET /tools). `{servers: []}`
 * without a catalog (none loaded, or the echo model).
 */
import { json } from "../http/responses.ts";
import type { AttachContext } from "./attach-context.ts";
import { Elysia } from "elysia";
import { withSession } from "./route-context.ts";
import * as v from "valibot";
import { responses } from "../http/wire-schemas.ts";

export function mcpRoutes(context: AttachContext) {
  const service = context.sessions;
  return new Elysia({ name: "spar.attach.mcp" }).use(withSession).get(
    "/mcp",
    async ({ target, caller }) => {
      await service.authorize(target, caller, "read");
      return json(200, { servers: context.mcp?.rows() ?? [] });
    },
    {
      response: responses(
        {
          200: v.object({
            servers: v.array(v.looseObject({ name: v.string(), status: v.string(), transport: v.string() })),
          }),
        },
        { extra: [404] },
      ),
      detail: { summary: "The tool servers of mcp.json and their state", tags: ["tools"] },
    },
  );
}
