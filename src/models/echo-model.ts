/**
 * The echo model (D14): offline, replies with the text of the turn's prompt (the last user
 * message). Usage is estimated as ceil(chars / 4) tokens: input over every message of the
 * request, output over the reply.
 */
import { type ChatMessage, MODEL_SPEC_VERSION, type Model, type ModelChunk, type ModelRequest } from "../core/model.ts";
import { estimateTokens } from "../core/usage.ts";

export const ECHO_NO_INPUT = "(echo: no user input)";

export class EchoModel implements Model {
  readonly specificationVersion = MODEL_SPEC_VERSION;
  readonly name = "echo";
  readonly provider = "echo";

  async *stream(request: ModelRequest): AsyncIterable<ModelChunk> {
    const reply = lastUserText(request.messages) ?? ECHO_NO_INPUT;
    yield { type: "text-start", id: "text-0" };
    yield { type: "text-delta", id: "text-0", text: reply };
    yield { type: "text-end", id: "text-0" };
    let inputChars = 0;
    for (const message of request.messages) inputChars += messageLength(message);
    const inputTokens = Math.ceil(inputChars / 4);
    const outputTokens = estimateTokens(reply);
    yield {
      type: "finish",
      finishReason: "stop",
      usage: {
        inputTokens,
        cachedInputTokens: 0,
        cacheWriteInputTokens: 0,
        outputTokens,
        thoughtsTokens: 0,
        toolUseTokens: 0,
        totalTokens: inputTokens + outputTokens,
      },
    };
  }
}

function lastUserText(messages: readonly ChatMessage[]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message?.role === "user" && message.text.trim() !== "") return message.text;
  }
  return undefined;
}

function messageLength(message: ChatMessage): number {
  switch (message.role) {
    case "user":
    case "assistant":
      return message.text.length;
    case "tool":
      return JSON.stringify(message.output).length;
  }
}
