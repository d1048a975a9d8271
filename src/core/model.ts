/**
 * The model interface every model implements (echo, scripted, and later real providers), and the
 * conversation shape a turn hands it. Declared here; implemented in src/models/. Pure types.
 */
import type { ToolCall } from "./events.ts";
import type { TokenUsage } from "./usage.ts";

export type ChatMessage =
  | { role: "user"; text: string }
  | { role: "assistant"; text: string; toolCalls: ToolCall[] }
  | { role: "tool"; callId: string; name: string; output: Record<string, unknown>; isError: boolean };

/** Which model a turn runs and how to build it inside the worker. */
export interface ModelSpec {
  provider: "echo" | "scripted";
  name: string;
  /** scripted: path of the JSON Lines script (D15). */
  scriptPath?: string;
  /** scripted: fail the turn when the request differs from the recorded one. */
  scriptStrict?: boolean;
}

export interface ToolSpec {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

export interface ModelRequest {
  messages: readonly ChatMessage[];
  tools: readonly ToolSpec[];
  signal: AbortSignal;
}

/** What a model call streams: text deltas, proposed tool calls, then exactly one finish. */
export type ModelChunk =
  | { type: "text-delta"; text: string }
  | { type: "tool-call"; call: ToolCall }
  | { type: "finish"; finishReason: string; usage: TokenUsage };

export interface Model {
  /** Model id as reported on /status, usage and frames. */
  readonly name: string;
  readonly provider: string;
  stream(request: ModelRequest): AsyncIterable<ModelChunk>;
}

/**
 * A failure a model reports, classified later into a turn-error kind. `status` is the HTTP
 * status or provider code when there is one.
 */
export class ModelCallError extends Error {
  readonly status: string | undefined;
  constructor(message: string, status?: string) {
    super(message);
    this.name = "ModelCallError";
    this.status = status;
  }
}
