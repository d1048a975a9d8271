/**
 * The result a dispatch shape's run recorded: the `dispatch-result` row written by the execution
 * that drained a given prompt (an inject's). Pure: read from the coordinator session's rows.
 */
import type { SessionEvent } from "../../core/events.ts";
import { DISPATCH_RESULT_ROW } from "./dispatch-step.ts";

/** What POST /inject answers as `result`: the specialist whose output it is, and the output. */
export interface DispatchResult {
  specialist: string;
  output: Record<string, unknown>;
}

export function dispatchResultOf(rows: readonly SessionEvent[], promptId: string): DispatchResult | undefined {
  const prompt = rows.find((row) => row.kind === "user-message" && row.promptIds.includes(promptId));
  if (prompt === undefined) return undefined;
  const recorded = rows.findLast(
    (row) =>
      row.kind === "audit" &&
      row.name === DISPATCH_RESULT_ROW &&
      row.invocationId === prompt.invocationId &&
      row.metadata.valid !== false,
  );
  if (recorded?.kind !== "audit") return undefined;
  const output = recorded.metadata.result;
  return {
    specialist: String(recorded.metadata.specialist),
    output: typeof output === "object" && output !== null ? (output as Record<string, unknown>) : {},
  };
}
