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

/** The offline models (D14, D15). */
export type OfflineProvider = "echo" | "scripted";
/** Providers reached through the Vercel AI SDK (D16, D23). */
export type RemoteProvider = "openai" | "anthropic" | "google" | "openai-compatible";
export type ModelProvider = OfflineProvider | RemoteProvider;

/** Which model a turn runs and how to build it inside the worker. Serializable. */
export interface ModelSpec {
  provider: ModelProvider;
  /** Model id as the provider names it (`echo` and `scripted` for the offline models). */
  name: string;
  /** scripted: path of the JSON Lines script (D15). */
  scriptPath?: string;
  /** scripted: fail the turn when the request differs from the recorded one. */
  scriptStrict?: boolean;
  /** Remote providers: API base URL including its version path (the SDK's `baseURL`). */
  baseUrl?: string;
  /**
   * Remote providers: name of the environment variable holding the API key. The key itself is
   * read inside the worker and never crosses the channel or reaches a log.
   */
  apiKeyEnv?: string;
  /** Remote providers: fail a call that receives nothing from the provider for this long. */
  stallTimeoutMs?: number;
  /** Remote providers: fail a call that has not finished after this long. */
  callTimeoutMs?: number;
  /** Remote providers: output-token cap of each call (unset: the provider's default). */
  maxOutputTokens?: number;
  /**
   * Context window in tokens, when configured (`--model-context-window`); automatic compaction
   * keeps the conversation under it (D155). Unset: the offline models' 128,000, or the same
   * figure assumed for a remote model and announced as `window-unknown`.
   */
  contextWindowTokens?: number;
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
  /** System prompt, when the session has one. */
  system?: string;
  /** Output-token cap of this call; a call that hits it finishes with `length`. */
  maxOutputTokens?: number;
  /** Extra headers of the provider request: the model call span's W3C trace context (D301). */
  headers?: Record<string, string>;
}

/**
 * The version of the model stream below (`Model.specificationVersion`), kept the way the AI SDK
 * versions its LanguageModel interface: a model declares the version it speaks, and a change of the part
 * vocabulary is a new version. v1 streamed bare text deltas and complete tool calls; v2 (D296)
 * brackets them: text travels inside `text-start` / `text-end` of a model-local id, a tool call's
 * input inside `tool-input-start` / `tool-input-end` of its call id, so every surface can frame a
 * message as it streams instead of inventing boundaries from complete rows.
 */
export const MODEL_SPEC_VERSION = "v2";

/**
 * What a model call streams (version v2): text parts, tool-input parts, complete tool calls, then
 * exactly one finish. A `text-delta` belongs to the open text part of its id; a `tool-call`
 * completes the tool input of the same call id (a model that does not stream tool input sends
 * the `tool-call` alone). `finishReason` uses the AI SDK's values (`stop`, `length`,
 * `content-filter`, `tool-calls`, `error`, `interrupted`, `other`); `length` means the
 * output-token cap was hit, nothing else.
 */
export type ModelChunk =
  | { type: "text-start"; id: string }
  | { type: "text-delta"; id: string; text: string }
  | { type: "text-end"; id: string }
  | { type: "tool-input-start"; callId: string; name: string }
  | { type: "tool-input-delta"; callId: string; delta: string }
  | { type: "tool-input-end"; callId: string }
  | { type: "tool-call"; call: ToolCall }
  | { type: "finish"; finishReason: string; usage: TokenUsage };

export interface Model {
  /** The stream vocabulary the model speaks. */
  readonly specificationVersion: typeof MODEL_SPEC_VERSION;
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
