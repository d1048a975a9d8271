/**
 * ResponseAssembler: one model call's stream (model spec v2, core/model.ts) made into the
 * session's message parts and the complete response (D296). The response is one message: its
 * text opens at the model's first text part and closes at the model's text end, before a tool
 * call opens, or at the finish; each tool call opens, streams its argument text and closes. The
 * assembler keeps the parts well formed whatever the model sends: text without a start opens the
 * message, a `tool-call` whose input never streamed gets its start, arguments and end, and
 * `close` ends whatever is still open (a finish, a cancel or a failed stream). Pure.
 */
import type { MessagePart, ToolCall } from "./events.ts";
import type { ModelChunk } from "./model.ts";
import type { TokenUsage } from "./usage.ts";

export interface AssembledResponse {
  text: string;
  toolCalls: ToolCall[];
  finish: { finishReason: string; usage: TokenUsage } | undefined;
}

interface OpenToolInput {
  name: string;
  /** Argument text streamed so far. */
  streamed: string;
}

export class ResponseAssembler {
  #text = "";
  #textOpen = false;
  readonly #toolCalls: ToolCall[] = [];
  /** Tool inputs opened and not yet closed, by call id. */
  readonly #openInputs = new Map<string, OpenToolInput>();
  /** Tool calls whose start was already published (closed or not). */
  readonly #startedCalls = new Set<string>();
  #finish: AssembledResponse["finish"];

  /** The parts one chunk publishes, in order. */
  accept(chunk: ModelChunk): MessagePart[] {
    switch (chunk.type) {
      case "text-start":
        return this.#openText();
      case "text-delta":
        if (chunk.text === "") return [];
        this.#text += chunk.text;
        return [...this.#openText(), { kind: "text-delta", text: chunk.text }];
      case "text-end":
        return this.#closeText();
      case "tool-input-start":
        return this.#startCall(chunk.callId, chunk.name);
      case "tool-input-delta":
        return this.#streamArgs(chunk.callId, chunk.delta);
      case "tool-input-end":
        return this.#endCall(chunk.callId);
      case "tool-call":
        return this.#completeCall(chunk.call);
      case "finish":
        this.#finish = { finishReason: chunk.finishReason, usage: chunk.usage };
        return this.close();
    }
  }

  /** The parts that close whatever is still open; idempotent. */
  close(): MessagePart[] {
    const parts = this.#closeText();
    for (const callId of [...this.#openInputs.keys()]) parts.push(...this.#endCall(callId));
    return parts;
  }

  /** The complete response so far. */
  response(): AssembledResponse {
    return { text: this.#text, toolCalls: [...this.#toolCalls], finish: this.#finish };
  }

  #openText(): MessagePart[] {
    if (this.#textOpen) return [];
    this.#textOpen = true;
    return [{ kind: "text-start" }];
  }

  #closeText(): MessagePart[] {
    if (!this.#textOpen) return [];
    this.#textOpen = false;
    return [{ kind: "text-end" }];
  }

  #startCall(callId: string, name: string): MessagePart[] {
    if (this.#startedCalls.has(callId)) return [];
    this.#startedCalls.add(callId);
    this.#openInputs.set(callId, { name, streamed: "" });
    return [...this.#closeText(), { kind: "tool-call-start", callId, name }];
  }

  #streamArgs(callId: string, delta: string): MessagePart[] {
    const input = this.#openInputs.get(callId);
    // Input of a call never opened (or already closed) has no frame to belong to.
    if (input === undefined || delta === "") return [];
    input.streamed += delta;
    return [{ kind: "tool-call-delta", callId, delta }];
  }

  #endCall(callId: string): MessagePart[] {
    if (!this.#openInputs.delete(callId)) return [];
    return [{ kind: "tool-call-end", callId }];
  }

  /** A complete call: opened and its arguments sent when its input did not stream, then closed. */
  #completeCall(call: ToolCall): MessagePart[] {
    this.#toolCalls.push(call);
    const parts = this.#startCall(call.callId, call.name);
    const input = this.#openInputs.get(call.callId);
    if (input !== undefined && input.streamed === "")
      parts.push(...this.#streamArgs(call.callId, JSON.stringify(call.args)));
    parts.push(...this.#endCall(call.callId));
    return parts;
  }
}
