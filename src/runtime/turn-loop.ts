/**
 * The turn loop that runs inside a turn worker: stream the model, publish each response's parts
 * as they stream (a message id minted per model call, D296), commit each complete response
 * through the port under that id (durable before the turn goes on), run proposed tool calls,
 * repeat until the model answers without tools. Knows nothing of threads or stores: the worker
 * entrypoint supplies the port.
 */
import type { MessagePart, ToolCall } from "../core/events.ts";
import { uuidv7 } from "../core/ids.ts";
import { type ChatMessage, type Model, ModelCallError, type ToolSpec } from "../core/model.ts";
import { ResponseAssembler } from "../core/response-assembler.ts";
import { ZERO_USAGE } from "../core/usage.ts";
import type { ToolRunResult } from "../core/tool-catalog.ts";
import type { ResponseDraft, TurnOutcome } from "./channel.ts";

export interface TurnPort {
  /** A streamed part of the response `messageId` (its row is committed under the same id). */
  part(messageId: string, part: MessagePart): void;
  commitResponse(draft: ResponseDraft): Promise<void>;
  runTool(call: ToolCall): Promise<ToolRunResult>;
  /** A model call starts: the headers its provider request carries (its span's trace context), if any. */
  modelCallStarting?(): Record<string, string> | undefined;
}

export async function runTurnLoop(
  model: Model,
  history: readonly ChatMessage[],
  port: TurnPort,
  signal: AbortSignal,
  maxSteps: number,
  tools: readonly ToolSpec[] = [],
  system?: string,
): Promise<TurnOutcome> {
  const messages: ChatMessage[] = [...history];
  try {
    for (let step = 0; step < maxSteps; step++) {
      // A turn cancelled while its tool calls ran must not start another model call.
      if (signal.aborted) return { status: "canceled" };
      const draft = await streamOneResponse(model, messages, tools, port, signal, system);
      if (signal.aborted) return { status: "canceled" };
      await port.commitResponse(draft);
      messages.push({ role: "assistant", text: draft.text, toolCalls: draft.toolCalls });
      if (draft.toolCalls.length === 0) return { status: "completed" };
      let parked = false;
      for (const call of draft.toolCalls) {
        if (signal.aborted) return { status: "canceled" };
        const result = await port.runTool(call);
        parked ||= result.endsTurn === true;
        messages.push({
          role: "tool",
          callId: call.callId,
          name: call.name,
          output: result.output,
          isError: result.isError,
        });
      }
      // A parked call ends the turn: the session waits for its answer, not for the model.
      if (parked) return { status: "completed" };
    }
    return { status: "failed", message: `turn stopped after ${maxSteps} model calls without a final answer` };
  } catch (error) {
    if (signal.aborted) return { status: "canceled" };
    return failureOutcome(error);
  }
}

async function streamOneResponse(
  model: Model,
  messages: readonly ChatMessage[],
  tools: readonly ToolSpec[],
  port: TurnPort,
  signal: AbortSignal,
  system: string | undefined,
): Promise<ResponseDraft> {
  const messageId = uuidv7();
  const headers = port.modelCallStarting?.();
  const assembler = new ResponseAssembler();
  const publish = (parts: MessagePart[]) => {
    for (const part of parts) port.part(messageId, part);
  };
  try {
    const request = {
      messages,
      tools,
      signal,
      ...(system === undefined ? {} : { system }),
      ...(headers === undefined ? {} : { headers }),
    };
    for await (const chunk of model.stream(request)) {
      if (signal.aborted) break;
      publish(assembler.accept(chunk));
    }
  } finally {
    // A cancel or a failed stream still closes what it opened: a subscriber never waits on a part.
    publish(assembler.close());
  }
  const { text, toolCalls, finish } = assembler.response();
  return {
    messageId,
    text,
    toolCalls,
    finishReason: finish?.finishReason ?? "stop",
    usage: finish?.usage ?? ZERO_USAGE,
    turnComplete: toolCalls.length === 0,
  };
}

function failureOutcome(error: unknown): TurnOutcome {
  if (error instanceof ModelCallError) {
    return error.status === undefined
      ? { status: "failed", message: error.message }
      : { status: "failed", message: error.message, code: error.status };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { status: "failed", message };
}
