/**
 * Rebuilding a session's in-memory state from its committed rows: the conversation the next
 * turn sends the model, and the usage ledger (one record per turn, all its model calls summed).
 */
import type { CommittedRow, ModelResponseEvent, SessionEvent, ToolCall, ToolResultEvent } from "../core/events.ts";
import {
  type ContextStats,
  ZERO_CONTEXT_STATS,
  compactedConversation,
  countCompaction,
  readCompaction,
} from "../core/compaction.ts";
import { checkpointMessage, countCheckpoint, readCheckpoint } from "../core/checkpoint.ts";
import type { DigestRecord } from "../core/digest.ts";
import type { DigestSavings, DigestTally } from "../core/digest-tally.ts";
import type { ChatMessage } from "../core/model.ts";
import type { SessionKey } from "../core/session-key.ts";
import type { EventLog } from "../core/event-log.ts";
import { type TokenUsage, type TurnCost, type UsageInfo, UsageLedger, ZERO_USAGE, addUsage } from "../core/usage.ts";

/** The chat message an event contributes to the conversation, if any. */
export function eventToMessage(event: SessionEvent): ChatMessage | undefined {
  switch (event.kind) {
    case "user-message":
      return event.text === "" ? undefined : { role: "user", text: event.text };
    case "model-response":
      return { role: "assistant", text: event.text, toolCalls: event.toolCalls };
    case "tool-result":
      return { role: "tool", callId: event.callId, name: event.name, output: event.output, isError: event.isError };
    case "audit":
      return undefined;
  }
}

/**
 * Tool calls of the conversation's last model response that have no result: a turn was cut
 * between the committed call and its result. Only the tail counts: calls answered by a later
 * prompt were already repaired or abandoned.
 */
export function missingToolResults(history: readonly ChatMessage[]): ToolCall[] {
  let last = -1;
  for (let index = history.length - 1; index >= 0; index--) {
    const message = history[index];
    if (message?.role === "user") return [];
    if (message?.role === "assistant") {
      last = index;
      break;
    }
  }
  const response = history[last];
  if (response?.role !== "assistant" || response.toolCalls.length === 0) return [];
  const answered = new Set(
    history.slice(last + 1).flatMap((message) => (message.role === "tool" ? [message.callId] : [])),
  );
  return response.toolCalls.filter((call) => !answered.has(call.callId));
}

/** Accumulates the model calls of one turn into a single usage record. */
export class TurnUsageAccumulator {
  #usage: TokenUsage = ZERO_USAGE;
  #cost: TurnCost = { costUsd: 0, costUsdUncachedReference: 0 };
  #firstTs: string | undefined;
  #model = "";
  #calls = 0;

  add(response: Pick<ModelResponseEvent, "usage" | "cost" | "ts" | "model">): void {
    this.#usage = addUsage(this.#usage, response.usage);
    this.#cost = {
      costUsd: this.#cost.costUsd + response.cost.costUsd,
      costUsdUncachedReference: this.#cost.costUsdUncachedReference + response.cost.costUsdUncachedReference,
    };
    this.#firstTs ??= response.ts;
    this.#model = response.model;
    this.#calls++;
  }

  get calls(): number {
    return this.#calls;
  }

  get usage(): TokenUsage {
    return this.#usage;
  }

  get cost(): TurnCost {
    return this.#cost;
  }

  recordInto(ledger: UsageLedger): void {
    if (this.#calls === 0) return;
    ledger.record({
      turn: ledger.turns + 1,
      ts: this.#firstTs ?? "",
      model: this.#model,
      usage: this.#usage,
      cost: this.#cost,
    });
  }
}

export interface RebuiltState {
  history: ChatMessage[];
  ledger: UsageLedger;
  context: ContextStats;
}

/**
 * The session as its rows leave it: the conversation (a compaction row replaces what it
 * summarized with its summary, a checkpoint row all of it), the usage ledger (keeping `recentTurns` per-turn records), and
 * the context counters.
 */
export function rebuildFromRows(rows: readonly CommittedRow[], recentTurns?: number): RebuiltState {
  let history: ChatMessage[] = [];
  const ledger = new UsageLedger(recentTurns);
  let context = ZERO_CONTEXT_STATS;
  let turn: { invocationId: string; accumulator: TurnUsageAccumulator } | undefined;
  for (const { event } of rows) {
    // A subagent instance's rows are its own conversation and usage (D351).
    if (event.branch !== undefined) continue;
    if (event.kind === "audit") {
      const checkpoint = readCheckpoint(event);
      if (checkpoint) {
        history = [checkpointMessage(checkpoint.summary, checkpoint.taskNote)];
        context = countCheckpoint(context, checkpoint);
        if (checkpoint.model !== undefined && checkpoint.usage && checkpoint.cost)
          ledger.recordExtra(checkpoint.model, checkpoint.usage, checkpoint.cost);
        continue;
      }
      const compaction = readCompaction(event);
      if (!compaction) continue;
      history = compactedConversation(history, compaction.summary, compaction.messagesKept);
      context = countCompaction(context, compaction);
      if (compaction.model !== undefined && compaction.usage && compaction.cost)
        ledger.recordExtra(compaction.model, compaction.usage, compaction.cost);
      continue;
    }
    if (event.kind === "tool-result" && event.digest) countDigest(ledger, event.digest);
    const message = eventToMessage(event);
    if (message) history.push(message);
    if (event.kind !== "model-response") continue;
    if (!turn || turn.invocationId !== event.invocationId) {
      turn?.accumulator.recordInto(ledger);
      turn = { invocationId: event.invocationId, accumulator: new TurnUsageAccumulator() };
    }
    turn.accumulator.add(event);
  }
  turn?.accumulator.recordInto(ledger);
  return { history, ledger, context };
}

/**
 * A tool result's digest into the ledger (D355): its strategy's counters and, for an agentic
 * summary, the summary call's usage and cost into the session's totals (like a compaction's).
 */
export function countDigest(ledger: UsageLedger, digest: DigestRecord): void {
  ledger.digests.add(digest);
  if (digest.subagent) ledger.recordExtra(digest.subagent.model, digest.subagent.usage, digest.subagent.cost);
}

/** The result row of a tool call (the last, should a call id repeat), if the rows hold one. */
export function findToolResult(rows: readonly CommittedRow[], callId: string): ToolResultEvent | undefined {
  for (let index = rows.length - 1; index >= 0; index--) {
    const event = rows[index]?.event;
    if (event?.kind === "tool-result" && event.callId === callId) return event;
  }
  return undefined;
}

/** Every committed row of a session, in seq order. */
export async function readAllRows(log: Pick<EventLog, "read">, key: SessionKey): Promise<CommittedRow[]> {
  const rows: CommittedRow[] = [];
  for (let cursor = 0; ; ) {
    const page = await log.read(key, cursor, 5000);
    if (page.length === 0) break;
    rows.push(...page);
    cursor = page[page.length - 1]?.seq ?? cursor;
  }
  return rows;
}

/**
 * The UsageInfo body: from memory while the ledger holds every per-turn record, else with the
 * older records rebuilt from the log (a turn still in flight there is left out: the ledger has
 * not recorded it yet).
 */
export async function usageInfoOf(
  ledger: UsageLedger,
  readRows: () => Promise<readonly CommittedRow[]>,
): Promise<UsageInfo> {
  if (ledger.complete) return ledger.toUsageInfo();
  const olderCount = ledger.turns - ledger.recentTurns.length;
  const full = rebuildFromRows(await readRows(), Number.POSITIVE_INFINITY).ledger;
  return ledger.toUsageInfo(full.recentTurns.slice(0, olderCount));
}

/** GET /context: the compaction and checkpoint counters (D356). */
export interface ContextInfo {
  compactions: number;
  checkpoints: number;
  /** The task note of the latest checkpoint, when it had one. */
  last_task_note?: string;
  chars_after_compaction: number;
  total_chars_summarized: number;
  /** Tool-result digests (D355); omitted before the first counted tool result. */
  digest_savings?: DigestSavings;
}

export function contextInfoOf(stats: ContextStats, digests?: DigestTally): ContextInfo {
  return {
    compactions: stats.compactions,
    checkpoints: stats.checkpoints,
    ...(stats.lastTaskNote !== undefined ? { last_task_note: stats.lastTaskNote } : {}),
    chars_after_compaction: stats.charsAfterCompaction,
    total_chars_summarized: stats.totalCharsSummarized,
    ...(digests === undefined || digests.empty ? {} : { digest_savings: digests.savings() }),
  };
}
