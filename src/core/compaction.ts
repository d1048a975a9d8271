/**
 * Automatic compaction (D155): when the conversation a turn sends grows past a share of the
 * model's context window, its older turns are replaced by one summary message and only the most
 * recent turns are kept verbatim. The summary is a durable row (author `agent/compaction`), so a
 * rebuilt session sends exactly what the live one did. Pure: the plan, the rows, and how a row
 * rewrites the conversation.
 */
import type { AuditEvent } from "./events.ts";
import type { ChatMessage } from "./model.ts";
import type { TokenUsage, TurnCost } from "./usage.ts";

export const COMPACTION_AUTHOR = "agent/compaction";
export const COMPACTION_EVENT = "compaction";
export const CONTEXT_REDUCTION_AUTHOR = "agent/context-reduction";

/** Compact once the estimated context passes this share of the window. */
export const TRIGGER_SHARE = 0.8;
/** Keep the most recent turns that fit in this share of the window. */
export const KEEP_SHARE = 0.3;
/** A summary longer than this share of the window does not reduce enough: compact mechanically. */
export const MAX_SUMMARY_SHARE = 0.25;
/** The window assumed for a model whose window nobody configured (announced once per process). */
export const ASSUMED_WINDOW_TOKENS = 128_000;

const SUMMARY_HEADER = "[Summary of the earlier conversation, written when it was compacted]";

export function compactionInstruction(focus?: string): string {
  const base =
    "Summarize the conversation so far for your own later use: the user's goals, decisions made, facts and results learned, files and commands involved, and work still open. Be concise; keep names, numbers and identifiers exact.";
  return focus ? `${base} Focus on: ${focus}` : base;
}

/**
 * Each message's size, measured once: the trigger check after every turn walks the whole
 * conversation, and re-encoding every tool output each time made that cost grow with the
 * session's length. Messages are not mutated once in a conversation.
 */
const measured = new WeakMap<ChatMessage, number>();

/** Characters a message contributes to a request (tool output counted as its JSON). */
export function messageChars(message: ChatMessage): number {
  let chars = measured.get(message);
  if (chars === undefined) {
    chars = measureMessage(message);
    measured.set(message, chars);
  }
  return chars;
}

function measureMessage(message: ChatMessage): number {
  switch (message.role) {
    case "user":
      return message.text.length;
    case "assistant":
      return message.text.length + (message.toolCalls.length === 0 ? 0 : JSON.stringify(message.toolCalls).length);
    case "tool":
      return JSON.stringify(message.output).length;
  }
}

export function conversationChars(messages: readonly ChatMessage[]): number {
  let chars = 0;
  for (const message of messages) chars += messageChars(message);
  return chars;
}

/** Estimated tokens of a conversation: ceil(chars / 4), as the offline models count. */
export function estimateContextTokens(messages: readonly ChatMessage[]): number {
  return Math.ceil(conversationChars(messages) / 4);
}

export interface CompactionPlan {
  /** Leading messages the summary replaces. */
  summarize: number;
  /** Trailing messages kept verbatim (starting at a user message, so no tool call loses its result). */
  keep: number;
}

/**
 * Which messages to summarize. `force` (a manual compaction) ignores the trigger and keeps only
 * the last turn. Undefined when
 * the context is under the trigger, or when fewer than two messages could be summarized.
 */
export function planCompaction(
  history: readonly ChatMessage[],
  windowTokens: number,
  force = false,
): CompactionPlan | undefined {
  if (!force && estimateContextTokens(history) <= windowTokens * TRIGGER_SHARE) return undefined;
  const keepBudgetChars = windowTokens * KEEP_SHARE * 4;
  let tail = 0;
  let split = -1;
  for (let index = history.length - 1; index >= 0; index--) {
    const message = history[index];
    if (!message) continue;
    tail += messageChars(message);
    if (message.role !== "user") continue;
    // The last turn is always kept; earlier turns while they fit (a forced compaction keeps only it).
    if (split >= 0 && (force || tail > keepBudgetChars)) break;
    split = index;
  }
  if (split < 2) return undefined;
  return { summarize: split, keep: history.length - split };
}

export function summaryMessage(summary: string): ChatMessage {
  return { role: "user", text: `${SUMMARY_HEADER}\n${summary}` };
}

/** The conversation after a compaction: the summary, then the kept tail. */
export function compactedConversation(history: readonly ChatMessage[], summary: string, keep: number): ChatMessage[] {
  return [summaryMessage(summary), ...history.slice(Math.max(0, history.length - keep))];
}

/**
 * A summary made without the model (it failed, or its summary did not fit), at most `maxChars`
 * long: how many messages went, and the last user requests among them (earlier summaries left
 * out), each cut short.
 */
export function mechanicalSummary(summarized: readonly ChatMessage[], maxChars: number): string {
  const head = `${summarized.length} earlier messages were removed without a model summary.`;
  const requests = summarized
    .flatMap((message) => (message.role === "user" && !message.text.startsWith(SUMMARY_HEADER) ? [message.text] : []))
    .slice(-5);
  const lines = [head];
  let used = head.length;
  const intro = "\nThe last requests among them:";
  if (requests.length > 0 && used + intro.length + 40 <= maxChars) {
    lines.push(intro.slice(1));
    used += intro.length;
    for (const text of requests.reverse()) {
      const room = Math.min(200, maxChars - used - 4);
      if (room < 20) break;
      const line = `- ${text.length > room ? `${text.slice(0, room - 1)}…` : text}`;
      lines.splice(2, 0, line);
      used += line.length + 1;
    }
  }
  return lines.join("\n").slice(0, Math.max(maxChars, head.length));
}

/** Turns to wait before trying again after `failures` automatic compactions failed in a row. */
export function cooldownTurns(failures: number): number {
  return failures <= 0 ? 0 : Math.min(2 ** (failures - 1), 16);
}

/** What a compaction row records (metadata of the `agent/compaction` audit row). */
export interface CompactionRecord {
  summary: string;
  messagesSummarized: number;
  messagesKept: number;
  charsSummarized: number;
  charsAfter: number;
  mechanical: boolean;
  manual: boolean;
  /** The summary's model call, when one was made. */
  model?: string;
  usage?: TokenUsage;
  cost?: TurnCost;
}

export function compactionMetadata(record: CompactionRecord): Record<string, unknown> {
  return {
    source: "agent",
    summary: record.summary,
    messages_summarized: record.messagesSummarized,
    messages_kept: record.messagesKept,
    chars_summarized: record.charsSummarized,
    chars_after: record.charsAfter,
    ...(record.mechanical ? { mechanical: true } : {}),
    ...(record.manual ? { manual: true } : {}),
    ...(record.model !== undefined ? { model: record.model } : {}),
    ...(record.usage !== undefined ? { usage: record.usage } : {}),
    ...(record.cost !== undefined ? { cost: record.cost } : {}),
  };
}

const num = (value: unknown): number => (typeof value === "number" && Number.isFinite(value) ? value : 0);

/** Read a compaction row back; undefined for any other row or one missing its summary. */
export function readCompaction(event: AuditEvent): CompactionRecord | undefined {
  if (event.author !== COMPACTION_AUTHOR || event.name !== COMPACTION_EVENT) return undefined;
  const meta = event.metadata;
  if (typeof meta.summary !== "string") return undefined;
  const record: CompactionRecord = {
    summary: meta.summary,
    messagesSummarized: num(meta.messages_summarized),
    messagesKept: num(meta.messages_kept),
    charsSummarized: num(meta.chars_summarized),
    charsAfter: num(meta.chars_after),
    mechanical: meta.mechanical === true,
    manual: meta.manual === true,
  };
  if (typeof meta.model === "string") record.model = meta.model;
  if (meta.usage && typeof meta.usage === "object") record.usage = meta.usage as TokenUsage;
  if (meta.cost && typeof meta.cost === "object") record.cost = meta.cost as TurnCost;
  return record;
}

/** Context counters GET /context reports, kept live and rebuilt from rows. */
export interface ContextStats {
  compactions: number;
  /** Checkpoints (`/slash/done`, D356; src/core/checkpoint.ts). */
  checkpoints: number;
  /** The task note of the latest checkpoint (absent when it had none). */
  lastTaskNote?: string;
  totalCharsSummarized: number;
  charsAfterCompaction: number;
}

export const ZERO_CONTEXT_STATS: ContextStats = Object.freeze({
  compactions: 0,
  checkpoints: 0,
  totalCharsSummarized: 0,
  charsAfterCompaction: 0,
});

export function countCompaction(stats: ContextStats, record: CompactionRecord): ContextStats {
  return {
    ...stats,
    compactions: stats.compactions + 1,
    totalCharsSummarized: stats.totalCharsSummarized + record.charsSummarized,
    charsAfterCompaction: record.charsAfter,
  };
}

export function contextFailedMetadata(
  reason: string,
  consecutiveFailures: number,
  cooldown: number,
  operation: "compaction" | "checkpoint" = "compaction",
): Record<string, unknown> {
  return {
    source: "agent",
    operation,
    reason,
    ...(consecutiveFailures > 0 ? { consecutive_failures: consecutiveFailures } : {}),
    ...(cooldown > 0 ? { cooldown_turns: cooldown } : {}),
  };
}

export function contextDegradedMetadata(
  operation: "window-unknown" | "mechanical-compaction" | "turn-cut",
  detail: string,
): Record<string, unknown> {
  return { source: "agent", operation, detail };
}

/**
 * The conversation with every tool result longer than `maxChars` cut to it (a marker says how much
 * was left out): what an automatic checkpoint asks the model to summarize when one result alone
 * took the conversation past the window (the summary call itself must fit).
 */
export function boundedForSummary(history: readonly ChatMessage[], maxChars: number): ChatMessage[] {
  return history.map((message) => {
    if (message.role !== "tool") return message;
    const text = JSON.stringify(message.output);
    if (text.length <= maxChars) return message;
    return {
      ...message,
      output: { truncated_for_summary: `${text.slice(0, maxChars)}…[+${text.length - maxChars} chars left out]` },
    };
  });
}
