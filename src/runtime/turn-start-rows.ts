/**
 * The rows and frames that open a turn: the prompt row (the drained inbox bundled, or an armed
 * continue note), preceded by rows repairing tool calls a cut turn left without a result, and the
 * `inbox` dequeued and `status-update` streaming frames published before them, and the messages
 * they add to the conversation. Pure: it builds, and never appends, publishes or changes the inbox
 * or the history.
 */
import { AUTO_CONTINUE_AUTHOR, continueNote } from "../core/auto-continue.ts";
import type { EventHeader, LiveFrame, SessionEvent, UserMessageEvent } from "../core/events.ts";
import { bundleInbox } from "../core/inbox-bundle.ts";
import type { ChatMessage } from "../core/model.ts";
import type { InboxItem } from "../core/session-store.ts";
import type { ArmedContinue } from "./continue-slot.ts";
import { eventToMessage, missingToolResults } from "./history.ts";
import { REPAIR_AUTHOR, repairRows } from "./turn-runner.ts";
import { ZERO_TIME } from "../core/zero-time.ts";

export interface TurnStartInput {
  invocationId: string;
  /** Inbox items the turn drains (empty for a continue turn or a bare wake). */
  items: readonly InboxItem[];
  /** The continue turn this turn runs, when no inbox item superseded it. */
  armed: ArmedContinue | undefined;
  /** The conversation so far (read only: to find tool calls left without a result). */
  history: readonly ChatMessage[];
  modelName: string;
  /** Adds pending guardrail feedback to the prompt text. */
  framePrompt(text: string): string;
  header(invocationId: string, author: string): EventHeader;
}

export interface TurnStartRows {
  /** The bundled human messages ("" when none: a continue turn or a bare wake). */
  human: string;
  /** Repair rows, then the prompt row, in commit order. */
  events: SessionEvent[];
  /** Prompt ids the append drains from the durable inbox. */
  drainedPromptIds: string[];
  /** Frames published before the rows. */
  before: LiveFrame[];
  /** What the rows add to the conversation once committed. */
  messages: ChatMessage[];
}

/** Build what a turn commits and publishes when it starts. */
export function turnStartRows(input: TurnStartInput): TurnStartRows {
  const { invocationId, items, armed } = input;
  const human = items.length > 0 ? bundleInbox(items.map((item) => item.message)) : "";
  const text = input.framePrompt(armed ? continueNote(armed.cause) : human);
  const userEvent: UserMessageEvent = {
    ...input.header(invocationId, armed ? AUTO_CONTINUE_AUTHOR : "user"),
    kind: "user-message",
    text,
    promptIds: armed ? [] : items.map((item) => item.promptId),
  };
  if (armed) userEvent.autoContinue = { cause: armed.cause, interruption: armed.interruption, attempt: armed.attempt };
  const repairs = repairRows(missingToolResults(input.history), () => input.header(invocationId, REPAIR_AUTHOR));
  const dequeued: LiveFrame[] = (armed ? [armed.promptId] : items.map((item) => item.promptId)).map((id) => ({
    type: "inbox",
    state: "dequeued",
    promptId: id,
    queuedAt: ZERO_TIME,
  }));
  const streaming: LiveFrame = { type: "status-update", turnState: "streaming", model: input.modelName };
  const events: SessionEvent[] = [...repairs, userEvent];
  const messages = events.map(eventToMessage).filter((message) => message !== undefined);
  return {
    human,
    events,
    drainedPromptIds: items.map((item) => item.promptId),
    before: [...dequeued, streaming],
    messages,
  };
}
