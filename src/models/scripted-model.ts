/**
 * The scripted model (D15): replays recorded turns from a JSON Lines script. One cursor per
 * daemon process (shared across sessions), supplied by the caller so it survives the turn
 * worker pool; past the end the call fails; strict mode compares the request's contents.
 */
import {
  type ChatMessage,
  MODEL_SPEC_VERSION,
  type Model,
  ModelCallError,
  type ModelChunk,
  type ModelRequest,
} from "../core/model.ts";
import { assertNever } from "../core/result.ts";
import type { TokenUsage } from "../core/usage.ts";
import type { ScriptedTurn, ScriptedUsage } from "./script-file.ts";

export interface ScriptedModelOptions {
  turns: readonly ScriptedTurn[];
  strict: boolean;
  /** Next index of the shared cursor (consumed even when the call then fails). */
  nextIndex: () => Promise<number>;
}

export class ScriptedModel implements Model {
  readonly specificationVersion = MODEL_SPEC_VERSION;
  readonly name = "scripted";
  readonly provider = "scripted";
  readonly #options: ScriptedModelOptions;

  constructor(options: ScriptedModelOptions) {
    this.#options = options;
  }

  async *stream(request: ModelRequest): AsyncIterable<ModelChunk> {
    const index = await this.#options.nextIndex();
    const turn = this.#options.turns[index];
    if (!turn) throw new ModelCallError(`scripted: script exhausted at turn ${index} (no more recorded responses)`);
    if (this.#options.strict) checkStrict(turn, request.messages, index);
    let usage: TokenUsage | undefined;
    let finishReason = "stop";
    let callNumber = 0;
    const textId = `text-${index}`;
    let textOpen = false;
    for (const response of turn.responses) {
      if (response.delayMs) await sleep(response.delayMs, request.signal);
      if (response.crash) await crashWorker(request.signal);
      if (response.spin) spinForever();
      if (response.error) throw new ModelCallError(response.error.message, response.error.status);
      for (const part of response.parts) {
        // Consecutive text parts are one text part of the model's stream; a call ends it.
        if (part.text) {
          if (!textOpen) yield { type: "text-start", id: textId };
          textOpen = true;
          yield { type: "text-delta", id: textId, text: part.text };
        }
        if (part.functionCall) {
          if (textOpen) yield { type: "text-end", id: textId };
          textOpen = false;
          callNumber++;
          const callId = part.functionCall.id ?? `call-${index}-${callNumber}`;
          yield { type: "tool-call", call: { callId, name: part.functionCall.name, args: part.functionCall.args } };
        }
      }
      if (response.usage) usage = toTokenUsage(response.usage);
      if (response.finishReason) finishReason = response.finishReason.toLowerCase();
    }
    if (textOpen) yield { type: "text-end", id: textId };
    yield { type: "finish", finishReason, usage: usage ?? toTokenUsage(undefined) };
  }
}

function toTokenUsage(usage: ScriptedUsage | undefined): TokenUsage {
  if (!usage) {
    return {
      inputTokens: 0,
      cachedInputTokens: 0,
      cacheWriteInputTokens: 0,
      outputTokens: 0,
      thoughtsTokens: 0,
      toolUseTokens: 0,
      totalTokens: 0,
    };
  }
  const cached = Math.min(usage.cachedContentTokenCount, usage.promptTokenCount);
  const cacheWrite = Math.min(usage.cacheWriteTokenCount, usage.promptTokenCount - cached);
  return {
    inputTokens: usage.promptTokenCount,
    cachedInputTokens: cached,
    cacheWriteInputTokens: cacheWrite,
    outputTokens: usage.candidatesTokenCount,
    thoughtsTokens: usage.thoughtsTokenCount,
    toolUseTokens: usage.toolUsePromptTokenCount,
    totalTokens:
      usage.totalTokenCount ?? usage.promptTokenCount + usage.candidatesTokenCount + usage.thoughtsTokenCount,
  };
}

/** The request in the genai `contents` shape recorded scripts use. */
export function toGenaiContents(messages: readonly ChatMessage[]): unknown[] {
  return messages.map((message) => {
    switch (message.role) {
      case "user":
        return { role: "user", parts: [{ text: message.text }] };
      case "assistant": {
        const parts: unknown[] = message.text ? [{ text: message.text }] : [];
        for (const call of message.toolCalls)
          parts.push({ functionCall: { id: call.callId, name: call.name, args: call.args } });
        return { role: "model", parts };
      }
      case "tool":
        return {
          role: "user",
          parts: [{ functionResponse: { id: message.callId, name: message.name, response: message.output } }],
        };
      default:
        return assertNever(message, "chat message");
    }
  });
}

function checkStrict(turn: ScriptedTurn, messages: readonly ChatMessage[], index: number): void {
  const recorded = turn.contents === undefined ? "" : JSON.stringify(turn.contents);
  const incoming = JSON.stringify(toGenaiContents(messages));
  if (recorded !== incoming) {
    throw new ModelCallError(
      `scripted: strict mismatch on turn ${index}: contents differ:\n  recorded: ${recorded}\n  incoming: ${incoming}`,
      "INVALID_ARGUMENT",
    );
  }
}

/** Hold the worker's thread in a loop nothing can interrupt: only terminating the worker ends it. */
function spinForever(): never {
  for (;;) {
    // spin
  }
}

/** Throw outside any promise chain: the worker dies of an uncaught error; the pool replaces it. */
function crashWorker(signal: AbortSignal): Promise<void> {
  setTimeout(() => {
    throw new Error("scripted crash: turn worker killed by an uncaught error");
  }, 0);
  return sleep(60_000, signal);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
