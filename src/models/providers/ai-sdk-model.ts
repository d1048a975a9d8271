/**
 * A remote model through the Vercel AI SDK (D16): one `streamText` step per model call (spar's
 * turn loop does the looping), tools declared without `execute` so proposed calls come back as
 * `tool-call` chunks for the permission gate, SDK retries off (spar decides retries), usage and
 * finish reason normalized per provider, failures thrown as ModelCallError.
 */
import { type LanguageModel, streamText } from "ai";
import type { ToolCall } from "../../core/events.ts";
import {
  MODEL_SPEC_VERSION,
  type Model,
  type ModelChunk,
  ModelCallError,
  type ModelRequest,
  type RemoteProvider,
} from "../../core/model.ts";
import { normalizeFinishReason } from "./finish-reason.ts";
import { toModelMessages, toToolSet } from "./prompt.ts";
import { toModelCallError } from "./provider-errors.ts";
import { tokenUsageOf } from "./provider-usage.ts";

// SDK warnings would go to process.emitWarning on the worker's stderr, unattributed.
globalThis.AI_SDK_LOG_WARNINGS = false;

export interface CallDeadlines {
  /** Nothing from the provider (not even a keep-alive event) for this long fails the call. */
  stallTimeoutMs: number;
  /** The whole call, first byte to finish. */
  callTimeoutMs: number;
}

export const DEFAULT_DEADLINES: CallDeadlines = { stallTimeoutMs: 5 * 60_000, callTimeoutMs: 15 * 60_000 };

export class AiSdkModel implements Model {
  readonly specificationVersion = MODEL_SPEC_VERSION;
  readonly name: string;
  readonly provider: RemoteProvider;
  readonly #model: LanguageModel;
  readonly #deadlines: CallDeadlines;

  readonly #maxOutputTokens: number | undefined;

  constructor(
    provider: RemoteProvider,
    name: string,
    model: LanguageModel,
    deadlines: CallDeadlines = DEFAULT_DEADLINES,
    maxOutputTokens?: number,
  ) {
    this.#maxOutputTokens = maxOutputTokens;
    this.provider = provider;
    this.name = name;
    this.#model = model;
    this.#deadlines = deadlines;
  }

  async *stream(request: ModelRequest): AsyncIterable<ModelChunk> {
    const deadline = new CallDeadline(request.signal, this.#deadlines, this.provider);
    const tools = toToolSet(request.tools);
    const maxOutputTokens = request.maxOutputTokens ?? this.#maxOutputTokens;
    const result = streamText({
      model: this.#model,
      messages: toModelMessages(request.messages),
      ...(tools === undefined ? {} : { tools }),
      ...(request.system === undefined ? {} : { system: request.system }),
      ...(maxOutputTokens === undefined ? {} : { maxOutputTokens }),
      ...(request.headers === undefined ? {} : { headers: request.headers }),
      maxRetries: 0,
      abortSignal: deadline.signal,
      // Every provider event (keep-alives included) shows as a `raw` part: the stall clock sees them.
      includeRawChunks: true,
      // Errors arrive as `error` parts below; the default handler would print them.
      onError: () => {},
    });
    let finish: (ModelChunk & { type: "finish" }) | undefined;
    try {
      for await (const part of result.fullStream) {
        deadline.alive();
        switch (part.type) {
          case "text-start":
            yield { type: "text-start", id: part.id };
            break;
          case "text-delta":
            if (part.text !== "") yield { type: "text-delta", id: part.id, text: part.text };
            break;
          case "text-end":
            yield { type: "text-end", id: part.id };
            break;
          case "tool-input-start":
            if (part.providerExecuted !== true)
              yield { type: "tool-input-start", callId: part.id, name: part.toolName };
            break;
          case "tool-input-delta":
            if (part.delta !== "") yield { type: "tool-input-delta", callId: part.id, delta: part.delta };
            break;
          case "tool-input-end":
            yield { type: "tool-input-end", callId: part.id };
            break;
          case "tool-call":
            if (part.providerExecuted !== true)
              yield { type: "tool-call", call: toolCallOf(part.toolCallId, part.toolName, part.input) };
            break;
          case "finish-step":
            finish = {
              type: "finish",
              finishReason: normalizeFinishReason(this.provider, part.finishReason, part.rawFinishReason),
              usage: tokenUsageOf(this.provider, part.usage),
            };
            break;
          case "error":
            throw toModelCallError(part.error, this.provider);
          case "abort":
            throw deadline.abortError();
          default:
            break;
        }
      }
    } catch (error) {
      if (request.signal.aborted) return;
      throw deadline.expired ?? toModelCallError(error, this.provider);
    } finally {
      deadline.clear();
    }
    if (!finish)
      throw new ModelCallError(`${this.provider} stream ended without finishing the response`, "UNAVAILABLE");
    yield finish;
  }
}

/**
 * The call's abort signal: the turn's cancel, a stall clock restarted by every provider event,
 * and an overall deadline. A deadline is not a cancel: it fails the call as DEADLINE_EXCEEDED
 * (transient_network, retryable), while a cancel ends it quietly.
 */
class CallDeadline {
  readonly #controller = new AbortController();
  readonly #deadlines: CallDeadlines;
  readonly #provider: RemoteProvider;
  readonly #overall: ReturnType<typeof setTimeout>;
  #stall: ReturnType<typeof setTimeout> | undefined;
  #unlink: () => void;
  expired: ModelCallError | undefined;

  constructor(cancel: AbortSignal, deadlines: CallDeadlines, provider: RemoteProvider) {
    this.#deadlines = deadlines;
    this.#provider = provider;
    const onCancel = () => this.#controller.abort(cancel.reason);
    if (cancel.aborted) onCancel();
    cancel.addEventListener("abort", onCancel, { once: true });
    this.#unlink = () => cancel.removeEventListener("abort", onCancel);
    this.#overall = setTimeout(
      () =>
        this.#expire(
          `the ${provider} call did not finish within ${seconds(deadlines.callTimeoutMs)} (--model-call-timeout)`,
        ),
      deadlines.callTimeoutMs,
    );
    this.alive();
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  alive(): void {
    if (this.#stall !== undefined) clearTimeout(this.#stall);
    this.#stall = setTimeout(
      () =>
        this.#expire(
          `no data from the ${this.#provider} API for ${seconds(this.#deadlines.stallTimeoutMs)} (--model-stall-timeout)`,
        ),
      this.#deadlines.stallTimeoutMs,
    );
  }

  /** Why the stream was aborted when the turn did not cancel it. */
  abortError(): ModelCallError {
    return this.expired ?? new ModelCallError(`the ${this.#provider} call was aborted`, "UNAVAILABLE");
  }

  clear(): void {
    clearTimeout(this.#overall);
    if (this.#stall !== undefined) clearTimeout(this.#stall);
    this.#unlink();
  }

  #expire(message: string): void {
    if (this.#controller.signal.aborted) return;
    this.expired = new ModelCallError(message, "DEADLINE_EXCEEDED");
    this.#controller.abort(this.expired);
  }
}

const seconds = (ms: number) => (ms % 60_000 === 0 ? `${ms / 60_000}m` : ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`);

/** A proposed call with object arguments (a non-object input, e.g. unparsable JSON, is wrapped). */
function toolCallOf(callId: string, name: string, input: unknown): ToolCall {
  if (typeof input === "object" && input !== null && !Array.isArray(input))
    return { callId, name, args: input as Record<string, unknown> };
  if (typeof input === "string") {
    try {
      const parsed: unknown = JSON.parse(input);
      if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed))
        return { callId, name, args: parsed as Record<string, unknown> };
    } catch {
      // not JSON: kept raw below
    }
  }
  return { callId, name, args: input === undefined ? {} : { input } };
}
