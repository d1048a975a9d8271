/**
 * The AG-UI 1.0 encoder (protocols.md section 2): the run stream's events with their wire `type`
 * values (SCREAMING_SNAKE) and required fields, built from svc's domain rows, and their SSE framing
 * (`data: <json>\n\n`, one event per frame). A model-response row (text and tool calls) becomes a
 * TEXT_MESSAGE_START/CONTENT/END triple for its text and a TOOL_CALL_START/ARGS/END triple per call
 * (parented on the response's message); a tool-result row a TOOL_CALL_RESULT. Message-granular:
 * boundaries come from complete rows today; this module is the only place that would read the
 * core's stream parts (start/delta/end) instead. Pure.
 */
import { assertNever } from "../../core/result.ts";
import type { SessionEvent } from "../../core/events.ts";

export type AguiEvent =
  | { type: "RUN_STARTED"; threadId: string; runId: string; parentRunId?: string }
  | { type: "RUN_FINISHED"; threadId: string; runId: string; outcome: RunOutcome }
  | { type: "RUN_ERROR"; message: string; code: RunErrorCode }
  | { type: "STATE_SNAPSHOT"; snapshot: unknown }
  | { type: "TEXT_MESSAGE_START"; messageId: string; role: "assistant" }
  | { type: "TEXT_MESSAGE_CONTENT"; messageId: string; delta: string }
  | { type: "TEXT_MESSAGE_END"; messageId: string }
  | { type: "TOOL_CALL_START"; toolCallId: string; toolCallName: string; parentMessageId: string }
  | { type: "TOOL_CALL_ARGS"; toolCallId: string; delta: string }
  | { type: "TOOL_CALL_END"; toolCallId: string }
  | { type: "TOOL_CALL_RESULT"; messageId: string; toolCallId: string; content: string; role: "tool" };

/** `aborted`: the session was aborted or gate-paused; `internal`: the run failed. */
export type RunErrorCode = "aborted" | "internal";

/** A question the run stopped on (AG-UI `Interrupt`: `id` and `reason` required). */
export interface AguiInterrupt {
  id: string;
  reason: string;
  message: string;
  responseSchema: Readonly<Record<string, unknown>>;
  expiresAt?: string;
  metadata?: Record<string, unknown>;
}

export type RunOutcome = { type: "success" } | { type: "interrupt"; interrupts: AguiInterrupt[] };

/** The events of one committed row (user messages and audit rows carry nothing to the client). */
export function rowEvents(event: SessionEvent): AguiEvent[] {
  switch (event.kind) {
    case "model-response": {
      const events: AguiEvent[] = [];
      if (event.text !== "") {
        events.push({ type: "TEXT_MESSAGE_START", messageId: event.id, role: "assistant" });
        events.push({ type: "TEXT_MESSAGE_CONTENT", messageId: event.id, delta: event.text });
        events.push({ type: "TEXT_MESSAGE_END", messageId: event.id });
      }
      for (const call of event.toolCalls) {
        events.push({
          type: "TOOL_CALL_START",
          toolCallId: call.callId,
          toolCallName: call.name,
          parentMessageId: event.id,
        });
        events.push({ type: "TOOL_CALL_ARGS", toolCallId: call.callId, delta: JSON.stringify(call.args) });
        events.push({ type: "TOOL_CALL_END", toolCallId: call.callId });
      }
      return events;
    }
    case "tool-result":
      return [
        {
          type: "TOOL_CALL_RESULT",
          messageId: event.id,
          toolCallId: event.callId,
          content: JSON.stringify(event.output),
          role: "tool",
        },
      ];
    case "user-message":
    case "audit":
      return [];
    default:
      return assertNever(event);
  }
}

/** One SSE frame. */
export function sseFrame(event: AguiEvent): string {
  return `data: ${JSON.stringify(event)}\n\n`;
}
