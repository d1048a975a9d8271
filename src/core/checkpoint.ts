/**
 * Checkpoints (`POST /slash/done`, D356): the operator says the task is done; the model
 * summarizes the whole conversation, and one durable row (author `agent/checkpoint`, name
 * `checkpoint`) records the summary and the operator's task note. The conversation the next turn
 * sends is that summary alone, so a rebuilt session sends exactly what the live one did. Pure:
 * the instruction, the row, how a row rewrites the conversation and counts on GET /context.
 */
import type { AuditEvent } from "./events.ts";
import type { ChatMessage } from "./model.ts";
import type { TokenUsage, TurnCost } from "./usage.ts";
import type { ContextStats } from "./compaction.ts";

export const CHECKPOINT_AUTHOR = "agent/checkpoint";
export const CHECKPOINT_EVENT = "checkpoint";

/** The longest task note kept (characters). */
export const MAX_TASK_NOTE = 2000;

const CHECKPOINT_HEADER = "[Checkpoint: the work above was finished and summarized]";

export function checkpointInstruction(note?: string): string {
  const base =
    "The task is done. Write a checkpoint of the conversation for your own later use: what the task was, what was done and decided, the results, the files and commands involved, and anything left open. Be concise; keep names, numbers and identifiers exact.";
  return note ? `${base} The operator's note on the task: ${note}` : base;
}

/** The one message a checkpoint leaves of the conversation. */
export function checkpointMessage(summary: string, note?: string): ChatMessage {
  const noteLine = note ? `\nTask note: ${note}` : "";
  return { role: "user", text: `${CHECKPOINT_HEADER}${noteLine}\n${summary}` };
}

/** What a checkpoint row records (metadata of the `agent/checkpoint` audit row). */
export interface CheckpointRecord {
  summary: string;
  taskNote?: string;
  messagesSummarized: number;
  charsSummarized: number;
  charsAfter: number;
  model?: string;
  usage?: TokenUsage;
  cost?: TurnCost;
}

export function checkpointMetadata(record: CheckpointRecord): Record<string, unknown> {
  return {
    source: "operator",
    summary: record.summary,
    ...(record.taskNote !== undefined ? { task_note: record.taskNote } : {}),
    messages_summarized: record.messagesSummarized,
    chars_summarized: record.charsSummarized,
    chars_after: record.charsAfter,
    ...(record.model !== undefined ? { model: record.model } : {}),
    ...(record.usage !== undefined ? { usage: record.usage } : {}),
    ...(record.cost !== undefined ? { cost: record.cost } : {}),
  };
}

const num = (value: unknown): number => (typeof value === "number" && Number.isFinite(value) ? value : 0);

/** Read a checkpoint row back; undefined for any other row or one missing its summary. */
export function readCheckpoint(event: AuditEvent): CheckpointRecord | undefined {
  if (event.author !== CHECKPOINT_AUTHOR || event.name !== CHECKPOINT_EVENT) return undefined;
  const meta = event.metadata;
  if (typeof meta.summary !== "string") return undefined;
  const record: CheckpointRecord = {
    summary: meta.summary,
    messagesSummarized: num(meta.messages_summarized),
    charsSummarized: num(meta.chars_summarized),
    charsAfter: num(meta.chars_after),
  };
  if (typeof meta.task_note === "string") record.taskNote = meta.task_note;
  if (typeof meta.model === "string") record.model = meta.model;
  if (meta.usage && typeof meta.usage === "object") record.usage = meta.usage as TokenUsage;
  if (meta.cost && typeof meta.cost === "object") record.cost = meta.cost as TurnCost;
  return record;
}

/** A checkpoint counts on GET /context: `checkpoints`, `last_task_note`, the characters summarized. */
export function countCheckpoint(stats: ContextStats, record: CheckpointRecord): ContextStats {
  const { lastTaskNote: _previous, ...rest } = stats;
  return {
    ...rest,
    checkpoints: stats.checkpoints + 1,
    ...(record.taskNote !== undefined ? { lastTaskNote: record.taskNote } : {}),
    totalCharsSummarized: stats.totalCharsSummarized + record.charsSummarized,
    charsAfterCompaction: record.charsAfter,
  };
}
