/**
 * The event model: one discriminated union of everything a session records durably, and one of
 * the live frames a session publishes. These are domain types with domain names (camelCase, no
 * wire spelling): every wire format maps from them in its own surface (the attach frames in
 * src/surfaces/attach/wire-frame.ts, later AG-UI and A2A beside it), never from another wire.
 * Switches over `kind` / `type` end in assertNever.
 *
 * Pure types and constructors; no I/O.
 */
import type { DigestRecord } from "./digest.ts";
import type { TokenUsage, TurnCost, UsageUpdate } from "./usage.ts";

/** A tool call the model proposed. */
export interface ToolCall {
  callId: string;
  name: string;
  args: Record<string, unknown>;
}

/** What every durable event carries before its kind: who wrote it, when, and in which turn. */
export interface EventHeader {
  /** Event id (UUIDv7). */
  id: string;
  /** RFC 3339 time the event was produced. */
  ts: string;
  /** The turn (invocation) that produced it; special rows use their own label. */
  invocationId: string;
  /** Who wrote it: `user`, the agent's name, or an audit author such as `attach/interrupt`. */
  author: string;
  /** The subagent instance that wrote it (its label, D351); absent on the session's own rows. */
  branch?: string;
}

/** The prompt a turn gave the model: the drained inbox messages as one bundle. */
export interface UserMessageEvent extends EventHeader {
  kind: "user-message";
  text: string;
  /** prompt_id of each inbox message drained into this turn, in arrival order. */
  promptIds: string[];
  /** Set on a synthesized continue prompt (author `agent/auto-continue`). */
  autoContinue?: { cause: "restart" | "transient" | "output-cap"; interruption: string; attempt: number };
}

/** One complete model response (never a partial chunk; deltas travel as live frames). */
export interface ModelResponseEvent extends EventHeader {
  kind: "model-response";
  model: string;
  text: string;
  toolCalls: ToolCall[];
  /** True on the final response of a model call. */
  turnComplete: boolean;
  finishReason: string;
  usage: TokenUsage;
  cost: TurnCost;
}

/** The result of running one tool call. */
export interface ToolResultEvent extends EventHeader {
  kind: "tool-result";
  callId: string;
  name: string;
  /** What the model read: the tool's result, or its digest (D353). */
  output: Record<string, unknown>;
  isError: boolean;
  latencyMs: number;
  /** How the result was digested, with the raw result when the model read a digest (D353, D354). */
  digest?: DigestRecord;
}

/** Operator and agent audit rows (interrupt, guardrail trip, perm mode, ...). */
export interface AuditEvent extends EventHeader {
  kind: "audit";
  /** Event name, e.g. `guardrail-trip`, `attach-perm-mode`. */
  name: string;
  metadata: Record<string, unknown>;
}

export type SessionEvent = UserMessageEvent | ModelResponseEvent | ToolResultEvent | AuditEvent;
export type SessionEventKind = SessionEvent["kind"];

/** An event as committed to the log: `seq` is per session, contiguous from 1, set at commit. */
export interface CommittedRow {
  seq: number;
  event: SessionEvent;
}

// ---------------------------------------------------------------------------------------------
// Live frames: published on a session's ordered queue next to committed rows; never replayed.

/** An inbox message entered the queue, or left it (drained into a turn, or withdrawn). */
export interface InboxFrame {
  type: "inbox";
  state: "queued" | "dequeued";
  promptId: string;
  /** RFC 3339 time it was queued; the zero time when the leaving side does not know it. */
  queuedAt: string;
  /** On `dequeued`: the item left the queue without a turn (a continue turn withdrawn, D165). */
  withdrawn?: true;
}

export type TurnState = "idle" | "streaming" | "awaiting_permission";

/** What the session's turn is doing now. */
export interface StatusUpdateFrame {
  type: "status-update";
  turnState: TurnState;
  /** The model a starting turn calls. */
  model?: string;
}

/** The session's cumulative usage after a turn (or a compaction). */
export interface UsageUpdateFrame extends UsageUpdate {
  type: "usage-update";
}

/** A turn ended normally: the terminal frame of a completed turn. */
export interface TurnCompleteFrame {
  type: "turn-complete";
  /** The inbox message that started the turn. */
  promptId: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  latencyMs: number;
}

export type TurnErrorKind =
  | "config_error"
  | "auth_error"
  | "model_not_found"
  | "rate_limited"
  | "transient_network"
  | "cost_ceiling"
  | "watchdog"
  | "canceled"
  | "unknown";

export interface TurnErrorPayload {
  kind: TurnErrorKind;
  code?: string;
  message: string;
  retryable: boolean;
  hint?: string;
}

export interface TurnErrorFrame extends TurnErrorPayload {
  type: "turn-error";
}

export interface WakeFrame {
  type: "wake";
  at: string;
}

export interface PauseFrame {
  type: "pause";
  state: "paused" | "resumed";
  reason?: string;
  interrupted?: boolean;
  mode?: string;
  at: string;
}

export interface GuardrailTripFrame {
  type: "guardrail-trip";
  guardrail: "watchdog" | "cost_ceiling";
  reason: string;
  /** The trip cut the running turn. */
  haltedTurn: boolean;
}

/** Live token streaming (D25): never persisted, never replayed. */
export interface TextDeltaFrame {
  type: "text-delta";
  /** The turn (invocation) whose model call produced the text. */
  invocationId: string;
  /** The model response the text belongs to: the id its model-response row is committed under (D296). */
  messageId: string;
  text: string;
}

/**
 * A boundary of a model response as it streams (D296): its text opens and closes, each proposed
 * tool call opens, streams its arguments (JSON text) and closes. Every part of one response
 * carries the response's message id, which its committed model-response row takes as its own id:
 * a subscriber that saw a message's parts knows the row completes it; one that joins late reads
 * the row instead.
 */
export type MessageBoundary =
  | { kind: "text-start" }
  | { kind: "text-end" }
  | { kind: "tool-call-start"; callId: string; name: string }
  | { kind: "tool-call-delta"; callId: string; delta: string }
  | { kind: "tool-call-end"; callId: string };

/** A streamed response's part as the turn worker reports it: a boundary, or text within it. */
export type MessagePart = MessageBoundary | { kind: "text-delta"; text: string };

/** A model response's boundary, live (never persisted, never replayed). */
export interface MessagePartFrame {
  type: "message-part";
  invocationId: string;
  messageId: string;
  part: MessageBoundary;
}

export type LiveFrame =
  | InboxFrame
  | StatusUpdateFrame
  | UsageUpdateFrame
  | TurnCompleteFrame
  | TurnErrorFrame
  | WakeFrame
  | PauseFrame
  | GuardrailTripFrame
  | TextDeltaFrame
  | MessagePartFrame;

export type LiveFrameType = LiveFrame["type"];

/** What a session's ordered publication queue carries to subscribers. */
export type Publication = { type: "row"; row: CommittedRow } | { type: "frame"; frame: LiveFrame };

/** Whether a turn's terminal frame is this one. */
export function isTerminalFrame(frame: LiveFrame): frame is TurnCompleteFrame | TurnErrorFrame {
  return frame.type === "turn-complete" || frame.type === "turn-error";
}
