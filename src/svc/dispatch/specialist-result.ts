/**
 * What a specialist's run reported: the arguments of its last `finish_task` call, else the text of
 * its last model response, looking no further back than the last message it was given (an
 * earlier run's answer is not this run's). Pure: read from the specialist session's rows.
 */
import type { SessionEvent } from "../../core/events.ts";
import { FINISH_TASK } from "./agent-roster.ts";

/** How a specialist's run ended: its result, or the write-gate questions it parked on. */
export type SpecialistRun =
  | { kind: "done"; result: Record<string, unknown> }
  | { kind: "parked"; interruptIds: string[]; keys: string[] };

export function specialistResult(rows: readonly SessionEvent[]): Record<string, unknown> {
  for (let index = rows.length - 1; index >= 0; index--) {
    const row = rows[index];
    if (row?.kind === "user-message") break;
    if (row?.kind !== "model-response") continue;
    const finish = row.toolCalls.findLast((call) => call.name === FINISH_TASK);
    if (finish !== undefined) return finish.args;
    if (row.toolCalls.length === 0) return { result: row.text };
  }
  return { result: "" };
}
