/**
 * The placeholder endpoints (docs/attach-api.md#placeholder-endpoints): named by the attach
 * protocol, their capability not built yet. Mutations answer 501 (capability missing).
 */
import { SparError } from "../../core/errors.ts";
import type { AttachContext } from "./attach-context.ts";
import { Elysia } from "elysia";
import { withSession } from "./route-context.ts";
import { responses } from "../http/wire-schemas.ts";

const MISSING_CAPABILITIES: Record<string, string> = {
  title: "title capability",
  "slash/done": "slash command done",
  "slash/btw": "slash command btw",
  "slash/replan": "slash command replan",
};

const LATER = ["later"];

export function placeholderRoutes(context: AttachContext) {
  const service = context.sessions;
  let routes = new Elysia({ name: "spar.attach.placeholders" }).use(withSession);
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
  return routes;
}
