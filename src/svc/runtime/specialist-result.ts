/**
 * What a specialist's run reported: the arguments of its last `finish_task` call, else the text of
 * its last model response. Pure: read from the specialist session's rows.
 */
import type { SessionEvent } from "../../core/events.ts";
import { FINISH_TASK } from "./agent-roster.ts";

export function specialistResult(rows: readonly SessionEvent[]): Record<string, unknown> {
  for (let index = rows.length - 1; index >= 0; index--) {
    const row = rows[index];
    if (row?.kind !== "model-response") continue;
    const finish = row.toolCalls.findLast((call) => call.name === FINISH_TASK);
    if (finish !== undefined) return finish.args;
    if (row.toolCalls.length === 0) return { result: row.text };
  }
  return { result: "" };
}
