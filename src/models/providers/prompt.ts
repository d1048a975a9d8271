/**
 * spar's conversation and tool specs in the AI SDK's shapes: ChatMessage[] to ModelMessage[]
 * (consecutive tool results merged into one tool message, as providers expect), ToolSpec[] to a
 * ToolSet whose tools have no `execute`, so every call comes back to spar's permission gate.
 */
import { type JSONValue, type ModelMessage, type ToolResultPart, type ToolSet, jsonSchema, tool } from "ai";
import type { ChatMessage, ToolSpec } from "../../core/model.ts";

export function toModelMessages(messages: readonly ChatMessage[]): ModelMessage[] {
  const out: ModelMessage[] = [];
  for (const message of messages) {
    switch (message.role) {
      case "user":
        out.push({ role: "user", content: message.text });
        break;
      case "assistant":
        out.push(assistantMessage(message));
        break;
      case "tool": {
        const part = toolResultPart(message);
        const last = out[out.length - 1];
        if (last?.role === "tool") last.content.push(part);
        else out.push({ role: "tool", content: [part] });
        break;
      }
    }
  }
  return out;
}

function assistantMessage(message: Extract<ChatMessage, { role: "assistant" }>): ModelMessage {
  if (message.toolCalls.length === 0) return { role: "assistant", content: message.text };
  return {
    role: "assistant",
    content: [
      ...(message.text === "" ? [] : [{ type: "text" as const, text: message.text }]),
      ...message.toolCalls.map((call) => ({
        type: "tool-call" as const,
        toolCallId: call.callId,
        toolName: call.name,
        input: call.args,
      })),
    ],
  };
}

function toolResultPart(message: Extract<ChatMessage, { role: "tool" }>): ToolResultPart {
  const value = message.output as JSONValue;
  return {
    type: "tool-result",
    toolCallId: message.callId,
    toolName: message.name,
    output: message.isError ? { type: "error-json", value } : { type: "json", value },
  };
}

/** Tools the model may propose, declared by schema only (no `execute`). */
export function toToolSet(tools: readonly ToolSpec[]): ToolSet | undefined {
  if (tools.length === 0) return undefined;
  const set: ToolSet = {};
  for (const spec of tools) {
    set[spec.name] = tool({
      description: spec.description,
      inputSchema: jsonSchema(spec.inputSchema as Parameters<typeof jsonSchema>[0]),
    });
  }
  return set;
}
