/**
 * Context reduction on the attach API (D155): GET /context (the compaction counters) and
 * POST /slash/compact (summarize all but the last turn now). Thin: the actor's Compactor works.
 */
import * as v from "valibot";
import { json } from "../http/responses.ts";
import type { AttachContext } from "./attach-context.ts";
import { optionalBody } from "./route-body.ts";
import type { RouteTable } from "./route-table.ts";

const CompactBody = v.object({ focus: v.optional(v.pipe(v.string(), v.maxLength(2000))) });

export function registerContextRoutes(table: RouteTable, context: AttachContext): void {
  const service = context.sessions;
  table.session("GET", "context", async (route) => {
    const actor = (await service.open(route, route.caller, "read")).actor;
    return json(200, actor.contextInfo());
  });

  table.session("POST", "slash/compact", async (route) => {
    const request = (await optionalBody(route, CompactBody)) ?? {};
    // A summary call may take minutes with nothing on the wire.
    route.keepOpen();
    const actor = (await service.open(route, route.caller, "write")).actor;
    const focus = request.focus?.trim();
    const result = await actor.compact(focus === "" ? undefined : focus);
    return json(200, {
      ...(result.eventId !== undefined ? { summary_event_id: result.eventId } : {}),
      ...(result.summary !== undefined ? { summary_text: result.summary } : {}),
      duration_ms: result.durationMs,
      ...(result.skipped ? { skipped: true } : {}),
    });
  });
}
