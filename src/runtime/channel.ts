/**
 * The main <-> turn-worker protocol: the only thing that crosses the thread boundary. Typed
 * messages, request ids for replies, cancellation by turn id, and a version both sides check.
 * Pure types plus two tiny guards; no I/O.
 */
import type { ToolCall } from "../core/events.ts";
import type { ChatMessage, ModelSpec, ToolSpec } from "../core/model.ts";
import type { TokenUsage } from "../core/usage.ts";

export const CHANNEL_VERSION = 1;

export interface RunTurnMessage {
  type: "run-turn";
  turnId: string;
  model: ModelSpec;
  /**
   * The conversation is cached per session in the worker: `historyKey` names it, the worker
   * already holds its first `historyBase` messages, and `history` carries the rest (the turn's
   * user message last). Base 0 sends everything.
   */
  historyKey: string;
  historyBase: number;
  history: ChatMessage[];
  /** Conversations the worker may forget (the pool mirrors the worker's cache exactly). */
  forget: string[];
  maxSteps: number;
  /** The tools the model is offered this turn (absent: none). */
  tools?: ToolSpec[];
  /** The system prompt of every model call of the turn (absent: none). */
  system?: string;
}

export type ToWorker =
  | { type: "hello"; version: number }
  | RunTurnMessage
  | { type: "cancel"; turnId: string }
  /** Drop these cached conversations (their session was evicted or deleted). */
  | { type: "forget"; keys: string[] }
  | { type: "reply"; requestId: number; result: ReplyResult }
  /** Liveness: a worker whose event loop runs answers `pong` at once. */
  | { type: "ping"; id: number };

export type ReplyResult = { ok: true; value: unknown } | { ok: false; error: string };

/** A complete model response the worker asks the main thread to commit before going on. */
export interface ResponseDraft {
  text: string;
  toolCalls: ToolCall[];
  finishReason: string;
  usage: TokenUsage;
  turnComplete: boolean;
}

export type WorkerRequest =
  /** Commit a model response row; reply `{ seq }`. */
  | { kind: "commit-response"; draft: ResponseDraft }
  /** Run a proposed tool call and commit its result; reply ToolRunResult. */
  | { kind: "run-tool"; call: ToolCall }
  /** Next index of the process-wide scripted-model cursor; reply `{ index }`. */
  | { kind: "script-cursor" };

export interface ToolRunResult {
  output: Record<string, unknown>;
  isError: boolean;
}

export type TurnOutcome =
  | { status: "completed" }
  | { status: "canceled" }
  | { status: "failed"; message: string; code?: string };

export type FromWorker =
  | { type: "ready"; version: number }
  | { type: "text-delta"; turnId: string; text: string }
  | { type: "request"; turnId: string; requestId: number; request: WorkerRequest }
  | { type: "turn-end"; turnId: string; outcome: TurnOutcome }
  | { type: "pong"; id: number };

export function isFromWorker(value: unknown): value is FromWorker {
  return typeof value === "object" && value !== null && typeof (value as { type?: unknown }).type === "string";
}

export function isToWorker(value: unknown): value is ToWorker {
  return typeof value === "object" && value !== null && typeof (value as { type?: unknown }).type === "string";
}
