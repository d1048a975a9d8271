/**
 * Checkpoint rows (D356): written and read back alike, counted on /context (the latest task note
 * only), and a rebuild leaves the checkpoint's summary as the whole conversation.
 */
import { expect, test } from "bun:test";
import {
  CHECKPOINT_AUTHOR,
  CHECKPOINT_EVENT,
  type CheckpointRecord,
  checkpointMessage,
  checkpointMetadata,
  countCheckpoint,
  readCheckpoint,
} from "../../../src/core/checkpoint.ts";
import { ZERO_CONTEXT_STATS } from "../../../src/core/compaction.ts";
import type { AuditEvent, CommittedRow, SessionEvent } from "../../../src/core/events.ts";
import { contextInfoOf, rebuildFromRows } from "../../../src/runtime/history.ts";

const record: CheckpointRecord = {
  summary: "deployed the api",
  taskNote: "api is live",
  messagesSummarized: 4,
  charsSummarized: 400,
  charsAfter: 60,
  model: "echo",
  usage: {
    inputTokens: 100,
    cachedInputTokens: 0,
    cacheWriteInputTokens: 0,
    outputTokens: 5,
    thoughtsTokens: 0,
    toolUseTokens: 0,
    totalTokens: 105,
  },
  cost: { costUsd: 0.25, costUsdUncachedReference: 0.25 },
};
const audit = (author: string, name: string, metadata: Record<string, unknown>): AuditEvent => ({
  id: "a",
  ts: "2026-11-28T00:00:00.000Z",
  invocationId: "c-1",
  author,
  kind: "audit",
  name,
  metadata,
});

test("a checkpoint row reads back as written; other rows do not", () => {
  expect(readCheckpoint(audit(CHECKPOINT_AUTHOR, CHECKPOINT_EVENT, checkpointMetadata(record)))).toEqual(record);
  expect(readCheckpoint(audit("agent/compaction", CHECKPOINT_EVENT, checkpointMetadata(record)))).toBeUndefined();
  expect(readCheckpoint(audit(CHECKPOINT_AUTHOR, CHECKPOINT_EVENT, { task_note: "x" }))).toBeUndefined();
});

test("counted on /context: checkpoints, the latest task note (cleared by one without), characters summarized", () => {
  const once = countCheckpoint(ZERO_CONTEXT_STATS, record);
  expect(contextInfoOf(once)).toEqual({
    compactions: 0,
    checkpoints: 1,
    last_task_note: "api is live",
    chars_after_compaction: 60,
    total_chars_summarized: 400,
  });
  const { taskNote: _note, ...noNote } = record;
  expect(contextInfoOf(countCheckpoint(once, noNote)).last_task_note).toBeUndefined();
});

test("a rebuild: the checkpoint's message is the whole conversation, later turns follow; its call counts in the totals", () => {
  const user = (id: string, text: string): SessionEvent => ({
    id,
    ts: "2026-11-28T00:00:00.000Z",
    invocationId: `e-${id}`,
    author: "user",
    kind: "user-message",
    text,
    promptIds: [],
  });
  const events: SessionEvent[] = [
    user("1", "deploy the api"),
    audit(CHECKPOINT_AUTHOR, CHECKPOINT_EVENT, checkpointMetadata(record)),
    user("2", "next task"),
  ];
  const rows = events.map((event, index): CommittedRow => ({ seq: index + 1, event }));
  const rebuilt = rebuildFromRows(rows);
  expect(rebuilt.history).toEqual([
    checkpointMessage("deployed the api", "api is live"),
    { role: "user", text: "next task" },
  ]);
  expect(contextInfoOf(rebuilt.context).checkpoints).toBe(1);
  expect(rebuilt.ledger.sessionCostUsd).toBeCloseTo(0.25, 10);
});
