/**
 * Drives one model call the way the turn loop does and gathers what it streamed: the text,
 * proposed tool calls, the finish chunk, or the ModelCallError it threw, and the message parts
 * the turn loop's assembler publishes from the model's stream (D296).
 */
import type { MessagePart, ToolCall } from "../../../src/core/events.ts";
import {
  type ChatMessage,
  type Model,
  ModelCallError,
  type ModelSpec,
  type ToolSpec,
} from "../../../src/core/model.ts";
import { ResponseAssembler } from "../../../src/core/response-assembler.ts";
import type { TokenUsage } from "../../../src/core/usage.ts";
import { buildModel } from "../../../src/models/model-factory.ts";

export interface CallResult {
  deltas: string[];
  text: string;
  toolCalls: ToolCall[];
  finish: { finishReason: string; usage: TokenUsage } | undefined;
  error: ModelCallError | undefined;
  /** The message parts published from the stream, as the turn loop publishes them. */
  parts: MessagePart[];
}

export const READ_FILE_TOOL: ToolSpec = {
  name: "read_file",
  description: "Read a file of the workspace",
  inputSchema: {
    type: "object",
    properties: { path: { type: "string" } },
    required: ["path"],
    additionalProperties: false,
  },
};

export const HELLO: ChatMessage[] = [{ role: "user", text: "hello" }];

/** Builds the model through the worker's factory (key read from `env` via process.env). */
export async function remoteModel(spec: ModelSpec): Promise<Model> {
  return buildModel(spec, () => Promise.reject(new Error("not scripted")));
}

export async function callModel(
  model: Model,
  messages: readonly ChatMessage[] = HELLO,
  tools: readonly ToolSpec[] = [READ_FILE_TOOL],
  extra: { system?: string; maxOutputTokens?: number } = {},
): Promise<CallResult> {
  const result: CallResult = { deltas: [], text: "", toolCalls: [], finish: undefined, error: undefined, parts: [] };
  const assembler = new ResponseAssembler();
  try {
    for await (const chunk of model.stream({ messages, tools, signal: new AbortController().signal, ...extra })) {
      result.parts.push(...assembler.accept(chunk));
      if (chunk.type === "text-delta") {
        result.deltas.push(chunk.text);
        result.text += chunk.text;
      } else if (chunk.type === "tool-call") result.toolCalls.push(chunk.call);
      else if (chunk.type === "finish") result.finish = { finishReason: chunk.finishReason, usage: chunk.usage };
    }
  } catch (error) {
    if (!(error instanceof ModelCallError)) throw error;
    result.error = error;
  }
  return result;
}
