/**
 * The main <-> turn-worker channel: the only thing that crosses that thread boundary. Its
 * vocabulary as types (what each side answers), the payloads, and its version; request ids,
 * replies, cancellation, the handshake and pings are the RPC layer's (rpc/). Pure types
 * plus the channel constant; no I/O.
 *
 * The main thread asks `run-turn` (answered with the turn's outcome; a cancel stops it) and says
 * `forget`; the worker says `message-part` and asks `commit-response`, `run-tool` and
 * `script-cursor` on behalf of one of its turns.
 */
import type { MessagePart, ToolCall } from "../core/events.ts";
import type { TraceCarrier } from "../core/session-store.ts";
import type { ModelCallSpan } from "../core/trace-carrier.ts";
import type { ChatMessage, ModelSpec, ToolSpec } from "../core/model.ts";
import type { ToolRunResult } from "../core/tool-catalog.ts";
import type { TokenUsage } from "../core/usage.ts";
import { type RpcMethod, defineChannel } from "../rpc/rpc-channel.ts";

/** The `run-turn` request's fields (on the wire beside `type: "run-turn"` and its `requestId`). */
export interface RunTurnMessage {
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
  /**
   * The turn span's trace context when tracing is on: the worker names each model call's span
   * itself (a child of this one), sends its context with the provider request and reports it
   * with the response (`ResponseDraft.call`) or the outcome (`TurnOutcome.modelCall`) (D324).
   */
  trace?: TraceCarrier;
}

export type { ModelCallSpan };

/** A complete model response the worker asks the main thread to commit before going on. */
export interface ResponseDraft {
  /** The response's message id: its parts carried it live, its row is committed under it (D296). */
  messageId: string;
  text: string;
  toolCalls: ToolCall[];
  finishReason: string;
  usage: TokenUsage;
  turnComplete: boolean;
  /** The span the call ran under (tracing on). */
  call?: ModelCallSpan;
}

/** What a turn asks of the main thread, as the session's turn handlers see it (WorkerPool's TurnHandlers). */
export type WorkerRequest =
  /** Commit a model response row; answered `{ seq }`. */
  | { kind: "commit-response"; draft: ResponseDraft }
  /** Run a proposed tool call and commit its result; answered ToolRunResult. */
  | { kind: "run-tool"; call: ToolCall }
  /** Next index of the process-wide scripted-model cursor; answered `{ index }`. */
  | { kind: "script-cursor" };

/** A model call still open as the turn ended (`modelCall`, tracing on) had no committed response. */
export type TurnOutcome =
  | { status: "completed" }
  | { status: "canceled"; modelCall?: ModelCallSpan }
  | { status: "failed"; message: string; code?: string; modelCall?: ModelCallSpan };

/** What the turn worker answers. */
export type TurnWorkerSide = {
  requests: {
    /** Run one turn; the answer is its outcome. Cancelable: the turn stops and answers `canceled`. */
    "run-turn": RpcMethod<RunTurnMessage, TurnOutcome>;
  };
  notifications: {
    /** Drop these cached conversations (their session was evicted or deleted). */
    forget: { keys: string[] };
  };
};

/** What the main thread answers, each on behalf of the turn `turnId` (WorkerRequest for its handlers). */
export type TurnMainSide = {
  requests: {
    "commit-response": RpcMethod<{ turnId: string; draft: ResponseDraft }, unknown>;
    "run-tool": RpcMethod<{ turnId: string; call: ToolCall }, ToolRunResult>;
    "script-cursor": RpcMethod<{ turnId: string }, { index: number }>;
  };
  notifications: {
    /** A streamed part of the response `messageId` (model spec v2, D296). */
    "message-part": { turnId: string; messageId: string; part: MessagePart };
  };
};

/**
 * Version 4: the worker names its model calls' spans (D324; `model-call` is gone). Version 3:
 * streamed message parts replace bare text deltas (D296). Version 2 was the RPC layer's envelope;
 * version 1 this module's own request ids.
 */
export const TURN_CHANNEL = defineChannel<TurnMainSide, TurnWorkerSide>("turn worker", 4);
