/**
 * The AG-UI 1.0 encoder (docs/svc-agui.md#the-run-stream): the run stream's events with their wire `type`
 * values (SCREAMING_SNAKE) and required fields, and their SSE framing (`data: <json>\n\n`, one
 * event per frame). Boundaries come from the core's model stream (D296): a session's live
 * `message-part` and `text-delta` frames become TEXT_MESSAGE_START/CONTENT/END and
 * TOOL_CALL_START/ARGS/END as the model streams, under the response's message id; a tool-result
 * row becomes TOOL_CALL_RESULT. A model-response row whose message streamed adds nothing (its id
 * is the message id); one that did not stream from its start (a run that joined after the
 * parts, a restart) is encoded whole from the row. `close` ends whatever a cut stream left open, so a run's terminal frame
 * never finds a message or call still open. Pure.
 */
import { assertNever } from "../../core/result.ts";
import type { LiveFrame, Publication, SessionEvent } from "../../core/events.ts";

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

/** A run's message events from the session's publications, in order; one encoder per run. */
export class AguiMessageEncoder {
  /** Messages whose text streamed, and calls whose start streamed: their rows add nothing. */
  readonly #streamedText = new Set<string>();
  readonly #streamedCalls = new Set<string>();
  readonly #openText = new Set<string>();
  readonly #openCalls = new Set<string>();
  /** Rows already encoded (a row seen live and again in the closing sweep of the log). */
  readonly #rows = new Set<string>();

  publication(publication: Publication): AguiEvent[] {
    return publication.type === "frame" ? this.#frame(publication.frame) : this.row(publication.row.event);
  }

  /** A committed row: a tool result, or what of a model response did not stream. */
  row(event: SessionEvent): AguiEvent[] {
    if (this.#rows.has(event.id)) return [];
    this.#rows.add(event.id);
    if (event.kind !== "model-response") return rowEvents(event);
    const unstreamed = {
      ...event,
      text: this.#streamedText.has(event.id) ? "" : event.text,
      toolCalls: event.toolCalls.filter((call) => !this.#streamedCalls.has(call.callId)),
    };
    return rowEvents(unstreamed);
  }

  /** The END events of every message and call still open. */
  close(): AguiEvent[] {
    const events: AguiEvent[] = [];
    for (const messageId of this.#openText) events.push({ type: "TEXT_MESSAGE_END", messageId });
    for (const toolCallId of this.#openCalls) events.push({ type: "TOOL_CALL_END", toolCallId });
    this.#openText.clear();
    this.#openCalls.clear();
    return events;
  }

  #frame(frame: LiveFrame): AguiEvent[] {
    if (frame.type === "text-delta") {
      // Text of a message whose start this run did not see is sent whole from its row instead.
      if (!this.#openText.has(frame.messageId)) return [];
      return [{ type: "TEXT_MESSAGE_CONTENT", messageId: frame.messageId, delta: frame.text }];
    }
    if (frame.type !== "message-part") return [];
    const { messageId, part } = frame;
    switch (part.kind) {
      case "text-start":
        return this.#startText(messageId);
      case "text-end":
        return this.#openText.delete(messageId) ? [{ type: "TEXT_MESSAGE_END", messageId }] : [];
      case "tool-call-start":
        this.#streamedCalls.add(part.callId);
        this.#openCalls.add(part.callId);
        return [
          { type: "TOOL_CALL_START", toolCallId: part.callId, toolCallName: part.name, parentMessageId: messageId },
        ];
      case "tool-call-delta":
        return this.#openCalls.has(part.callId)
          ? [{ type: "TOOL_CALL_ARGS", toolCallId: part.callId, delta: part.delta }]
          : [];
      case "tool-call-end":
        return this.#openCalls.delete(part.callId) ? [{ type: "TOOL_CALL_END", toolCallId: part.callId }] : [];
      default:
        return assertNever(part);
    }
  }

  #startText(messageId: string): AguiEvent[] {
    this.#streamedText.add(messageId);
    if (this.#openText.has(messageId)) return [];
    this.#openText.add(messageId);
    return [{ type: "TEXT_MESSAGE_START", messageId, role: "assistant" }];
  }
}

/** The events of one committed row whole (user messages and audit rows carry nothing to the client). */
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
