/**
 * The attach wire spelling of a session's live frames (D6, D215): each domain frame of
 * src/core/events.ts maps to its SSE event name and a snake_case payload, keys in the order
 * attach clients have always received them. The only place that knows this spelling: the A2A
 * and AG-UI listeners map from the domain frames, never from these.
 */
import type {
  GuardrailTripFrame,
  InboxFrame,
  LiveFrame,
  LiveFrameType,
  MessagePartFrame,
  PauseFrame,
  StatusUpdateFrame,
  TurnCompleteFrame,
  TurnState,
} from "../../core/events.ts";
import { assertNever } from "../../core/result.ts";
import type { UsageTally, UsageUpdate } from "../../core/usage.ts";

/** One attach frame: the SSE `event:` name and the JSON of its `data:` line. */
export interface WireFrame {
  event: string;
  data: Record<string, unknown>;
}

/** The SSE event name of each live frame, in the order capabilities advertises them. */
const EVENT_NAMES = {
  "status-update": "status-update",
  "usage-update": "usage-update",
  inbox: "inbox",
  "turn-complete": "turn-complete",
  "turn-error": "turn-error",
  pause: "pause",
  wake: "wake",
  "guardrail-trip": "guardrail-trip",
  "text-delta": "text-delta",
  "message-part": "message-part",
} as const satisfies Record<LiveFrameType, string>;

/** Typed frame names a client can expect on /events (the capabilities frame's `event_types`). */
export const LIVE_EVENT_NAMES: readonly string[] = Object.values(EVENT_NAMES);

export function wireFrame(frame: LiveFrame): WireFrame {
  const event = EVENT_NAMES[frame.type];
  switch (frame.type) {
    case "inbox":
      return { event, data: inboxData(frame) };
    case "status-update":
      return { event, data: statusData(frame) };
    case "usage-update":
      return { event, data: usageData(frame) };
    case "turn-complete":
      return { event, data: turnCompleteData(frame) };
    case "turn-error": {
      // The error's own fields are its wire names (the turn-error audit row carries the same object).
      const { type: _type, ...error } = frame;
      return { event, data: error };
    }
    case "wake":
      return { event, data: { at: frame.at } };
    case "pause":
      return { event, data: pauseData(frame) };
    case "guardrail-trip":
      return { event, data: guardrailTripData(frame) };
    case "text-delta":
      return { event, data: { invocation_id: frame.invocationId, text: frame.text, message_id: frame.messageId } };
    case "message-part":
      return { event, data: messagePartData(frame) };
    default:
      return assertNever(frame, "live frame type");
  }
}

/**
 * The `status-update` a new /events stream opens with (after capabilities): the daemon's model
 * first, then the turn state (the order this frame has always had, unlike a turn's own updates).
 */
export function openingStatusFrame(model: string, turnState: TurnState): WireFrame {
  return { event: EVENT_NAMES["status-update"], data: { model, turn_state: turnState } };
}

/** A response boundary (D296): `part` names it; a tool call's boundaries carry `call_id`. */
function messagePartData(frame: MessagePartFrame): Record<string, unknown> {
  const data: Record<string, unknown> = {
    invocation_id: frame.invocationId,
    message_id: frame.messageId,
    part: frame.part.kind,
  };
  const part = frame.part;
  if (part.kind === "tool-call-start") Object.assign(data, { call_id: part.callId, name: part.name });
  else if (part.kind === "tool-call-delta") Object.assign(data, { call_id: part.callId, delta: part.delta });
  else if (part.kind === "tool-call-end") data.call_id = part.callId;
  return data;
}

function inboxData(frame: InboxFrame): Record<string, unknown> {
  const data: Record<string, unknown> = { state: frame.state, prompt_id: frame.promptId, queued_at: frame.queuedAt };
  if (frame.withdrawn) data.withdrawn = true;
  return data;
}

function statusData(frame: StatusUpdateFrame): Record<string, unknown> {
  return frame.model === undefined
    ? { turn_state: frame.turnState }
    : { turn_state: frame.turnState, model: frame.model };
}

function tallyData(tally: UsageTally): Record<string, unknown> {
  return { tokens_in: tally.inputTokens, tokens_out: tally.outputTokens, cost_usd: tally.costUsd, turns: tally.turns };
}

/** The cumulative usage: totals, `by_model` once a model was used, `last_turn` once a turn ran. */
function usageData(update: UsageUpdate): Record<string, unknown> {
  const data: Record<string, unknown> = {
    tokens_in_total: update.total.inputTokens,
    tokens_out_total: update.total.outputTokens,
    cost_usd_total: update.total.costUsd,
    turns_total: update.total.turns,
  };
  if (update.byModel.size > 0) {
    const byModel: Record<string, unknown> = {};
    for (const [model, tally] of update.byModel) byModel[model] = tallyData(tally);
    data.by_model = byModel;
  }
  const last = update.lastTurn;
  if (last) {
    const lastTurn: Record<string, unknown> = {
      tokens_in: last.inputTokens,
      tokens_out: last.outputTokens,
      cost_usd: last.costUsd,
      model: last.model,
    };
    if (last.cachedInputTokens > 0) lastTurn.tokens_in_cached = last.cachedInputTokens;
    if (last.cacheWriteInputTokens > 0) lastTurn.tokens_in_cache_write = last.cacheWriteInputTokens;
    data.last_turn = lastTurn;
  }
  return data;
}

function turnCompleteData(frame: TurnCompleteFrame): Record<string, unknown> {
  return {
    prompt_id: frame.promptId,
    model: frame.model,
    tokens_in: frame.inputTokens,
    tokens_out: frame.outputTokens,
    cost_usd: frame.costUsd,
    latency_ms: frame.latencyMs,
  };
}

function pauseData(frame: PauseFrame): Record<string, unknown> {
  const data: Record<string, unknown> = { state: frame.state };
  if (frame.reason !== undefined) data.reason = frame.reason;
  if (frame.interrupted !== undefined) data.interrupted = frame.interrupted;
  if (frame.mode !== undefined) data.mode = frame.mode;
  data.at = frame.at;
  return data;
}

function guardrailTripData(frame: GuardrailTripFrame): Record<string, unknown> {
  return { guardrail: frame.guardrail, reason: frame.reason, halted_turn: frame.haltedTurn };
}
