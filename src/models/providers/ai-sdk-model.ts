/**
 * A remote model through the Vercel AI SDK (D16): one `streamText` step per model call (spar's
 * turn loop does the looping), tools declared without `execute` so proposed calls come back as
 * `tool-call` chunks for the permission gate, SDK retries off (spar decides retries), usage and
 * finish reason normalized per provider, failures thrown as ModelCallError.
 */
import { type LanguageModel, type LanguageModelUsage, streamText } from "ai";
import type { ToolCall } from "../../core/events.ts";
import { type Model, type ModelChunk, ModelCallError, type ModelRequest, type RemoteProvider } from "../../core/model.ts";
import { normalizeFinishReason } from "./finish-reason.ts";
import { toModelMessages, toToolSet } from "./prompt.ts";
import { toModelCallError } from "./provider-errors.ts";
import { tokenUsageOf } from "./provider-usage.ts";

// SDK warnings would go to process.emitWarning on the worker's stderr, unattributed.
globalThis.AI_SDK_LOG_WARNINGS = false;

export class AiSdkModel implements Model {
  readonly name: string;
  readonly provider: RemoteProvider;
  readonly #model: LanguageModel;

  constructor(provider: RemoteProvider, name: string, model: LanguageModel) {
    this.provider = provider;
    this.name = name;
    this.#model = model;
  }

  async *stream(request: ModelRequest): AsyncIterable<ModelChunk> {
    const tools = toToolSet(request.tools);
    const result = streamText({
      model: this.#model,
      messages: toModelMessages(request.messages),
      ...(tools === undefined ? {} : { tools }),
      ...(request.system === undefined ? {} : { system: request.system }),
      ...(request.maxOutputTokens === undefined ? {} : { maxOutputTokens: request.maxOutputTokens }),
      maxRetries: 0,
      abortSignal: request.signal,
      // Errors arrive as `error` parts below; the default handler would print them.
      onError: () => {},
    });
    let finish: { reason: ModelChunk & { type: "finish" } } | undefined;
    try {
      for await (const part of result.fullStream) {
        switch (part.type) {
          case "text-delta":
            if (part.text !== "") yield { type: "text-delta", text: part.text };
            break;
          case "tool-call":
            if (part.providerExecuted !== true) yield { type: "tool-call", call: toolCallOf(part.toolCallId, part.toolName, part.input) };
            break;
          case "finish-step":
            finish = { reason: this.#finishChunk(part.finishReason, part.rawFinishReason, part.usage) };
            break;
          case "error":
            throw toModelCallError(part.error, this.provider);
          case "abort":
            return;
          default:
            break;
        }
      }
    } catch (error) {
      if (request.signal.aborted) return;
      throw toModelCallError(error, this.provider);
    }
    if (!finish) throw new ModelCallError(`${this.provider} stream ended without finishing the response`, "UNAVAILABLE");
    yield finish.reason;
  }

  #finishChunk(reason: Parameters<typeof normalizeFinishReason>[1], raw: string | undefined, usage: LanguageModelUsage): ModelChunk & { type: "finish" } {
    return { type: "finish", finishReason: normalizeFinishReason(this.provider, reason, raw), usage: tokenUsageOf(this.provider, usage) };
  }
}

/** A proposed call with object arguments (a non-object input, e.g. unparsable JSON, is wrapped). */
function toolCallOf(callId: string, name: string, input: unknown): ToolCall {
  if (typeof input === "object" && input !== null && !Array.isArray(input)) return { callId, name, args: input as Record<string, unknown> };
  if (typeof input === "string") {
    try {
      const parsed: unknown = JSON.parse(input);
      if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) return { callId, name, args: parsed as Record<string, unknown> };
    } catch {
      // not JSON: kept raw below
    }
  }
  return { callId, name, args: input === undefined ? {} : { input } };
}
