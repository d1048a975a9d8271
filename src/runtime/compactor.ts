/**
 * Compactor: a session's automatic compaction (D155), run between turns. When the conversation
 * passes the trigger share of the model's context window, the model summarizes the older turns
 * (no tools, no system prompt, on a turn worker) and one `agent/compaction` row records the
 * summary; the in-memory conversation is rewritten in place and its worker-cache key renewed. A
 * failed summary writes `context-reduction-failed` and backs off for a few turns; a conversation
 * past the whole window is then compacted mechanically (`context-reduction-degraded`). Also the
 * operator's checkpoint (`/slash/done`, D356), the whole conversation summarized at once.
 */
import {
  ASSUMED_WINDOW_TOKENS,
  COMPACTION_AUTHOR,
  COMPACTION_EVENT,
  CONTEXT_REDUCTION_AUTHOR,
  type CompactionPlan,
  type CompactionRecord,
  type ContextStats,
  MAX_SUMMARY_SHARE,
  compactedConversation,
  compactionInstruction,
  compactionMetadata,
  contextDegradedMetadata,
  contextFailedMetadata,
  conversationChars,
  boundedForSummary,
  cooldownTurns,
  countCompaction,
  estimateContextTokens,
  mechanicalSummary,
  planCompaction,
} from "../core/compaction.ts";
import {
  CHECKPOINT_AUTHOR,
  CHECKPOINT_EVENT,
  type CheckpointRecord,
  checkpointInstruction,
  checkpointMessage,
  checkpointMetadata,
  countCheckpoint,
} from "../core/checkpoint.ts";
import type { AuditEvent } from "../core/events.ts";
import { SparError } from "../core/errors.ts";
import { uuidv7 } from "../core/ids.ts";
import type { ChatMessage } from "../core/model.ts";
import { type TokenUsage, type TurnCost, type UsageLedger, estimateTokens, priceUsage } from "../core/usage.ts";
import type { ActorContext } from "./actor-types.ts";
import { type BareCall, bareCall } from "./bare-call.ts";
import type { Journal } from "./session-journal.ts";

export interface CompactorDeps {
  context: ActorContext;
  /** The session's conversation; rewritten in place. */
  history: ChatMessage[];
  ledger: UsageLedger;
  journal: Journal;
  /** The conversation changed shape: the workers' cached copy is stale. */
  renewConversationKey(): void;
}

export interface CheckpointResult {
  /** Id of the checkpoint row, when one was written. */
  eventId?: string;
  summary?: string;
  taskNote?: string;
  durationMs: number;
  skipped: boolean;
}

export interface CompactionResult {
  /** Id of the compaction row, when one was written. */
  eventId?: string;
  summary?: string;
  durationMs: number;
  skipped: boolean;
}

type Summary = { ok: true; text: string; usage: TokenUsage } | { ok: false; reason: string; canceled?: boolean };

export class Compactor {
  readonly #deps: CompactorDeps;
  #stats: ContextStats;
  #failures = 0;
  #cooldown = 0;
  /** The summary call in flight, if any. */
  #running: BareCall | undefined;

  constructor(deps: CompactorDeps, stats: ContextStats) {
    this.#deps = deps;
    this.#stats = stats;
  }

  /** Stop a summary call in flight (shutdown, delete): it ends as canceled and writes nothing. */
  cancel(): void {
    this.#running?.cancel();
  }

  get stats(): ContextStats {
    return this.#stats;
  }

  get windowTokens(): number {
    return this.#deps.context.model.contextWindowTokens ?? ASSUMED_WINDOW_TOKENS;
  }

  /**
   * After a turn: compact when the conversation passed the trigger (failures back off). When there
   * is nothing earlier to summarize and the conversation still does not fit the window (the last
   * turn alone, cut by a result past it), checkpoint the whole conversation instead (D372).
   */
  async afterTurn(): Promise<void> {
    const window = this.windowTokens;
    const plan = planCompaction(this.#deps.history, window);
    if (!plan) {
      if (estimateContextTokens(this.#deps.history) >= window) await this.#autoCheckpoint();
      return;
    }
    await this.#announceAssumedWindow();
    if (this.#cooldown > 0) {
      this.#cooldown--;
      if (estimateContextTokens(this.#deps.history) >= window) await this.#mechanical(plan);
      return;
    }
    const started = performance.now();
    const summary = await this.#summarize(plan);
    if (summary.ok) {
      this.#failures = 0;
      await this.#commit(plan, summary.text, false, false, summary.usage, started);
      return;
    }
    // A stopping daemon cancels the call: not a failure, and the next start compacts again.
    if (summary.canceled || this.#deps.context.isShuttingDown()) return;
    this.#failures++;
    this.#cooldown = cooldownTurns(this.#failures);
    await this.#append({
      name: "context-reduction-failed",
      metadata: contextFailedMetadata(summary.reason, this.#failures, this.#cooldown),
    });
    if (estimateContextTokens(this.#deps.history) >= window) await this.#mechanical(plan);
  }

  /**
   * POST /slash/compact: summarize everything but the last turn now, whatever the trigger says.
   * Skipped when there is too little to summarize; a failed summary is a 500 and writes no row
   * (docs/attach-api.md#endpoints).
   */
  async compactNow(focus?: string): Promise<CompactionResult> {
    const started = performance.now();
    const plan = planCompaction(this.#deps.history, this.windowTokens, true);
    if (!plan) return { durationMs: Math.round(performance.now() - started), skipped: true };
    const summary = await this.#summarize(plan, focus);
    if (!summary.ok) throw summaryFailed(summary);
    return this.#commit(plan, summary.text, false, true, summary.usage, started);
  }

  /**
   * POST /slash/done (D356): the task is done; the whole conversation becomes one checkpoint row
   * (its summary and the operator's task note) and the next turn starts from it. Skipped when
   * there is nothing to summarize (fewer than two messages, e.g. right after a checkpoint). A
   * failed summary is a 500 and writes nothing: a manual checkpoint writes no
   * `context-reduction-failed` row.
   */
  async checkpointNow(note?: string): Promise<CheckpointResult> {
    const started = performance.now();
    if (this.#deps.history.length < 2) return { durationMs: Math.round(performance.now() - started), skipped: true };
    const summary = await this.#checkpointSummary(note);
    if (!summary.ok) throw summaryFailed(summary);
    return this.#commitCheckpoint(summary, note, started);
  }

  /**
   * The automatic checkpoint (D372): the whole conversation summarized, its longest tool results
   * cut so the summary call fits the window. A failure writes `context-reduction-failed`
   * (operation `checkpoint`) and backs off as a failed compaction does.
   */
  async #autoCheckpoint(): Promise<void> {
    if (this.#deps.history.length < 2) return;
    await this.#announceAssumedWindow();
    if (this.#cooldown > 0) {
      this.#cooldown--;
      return;
    }
    const started = performance.now();
    const summary = await this.#checkpointSummary(undefined);
    if (summary.ok) {
      this.#failures = 0;
      await this.#commitCheckpoint(summary, undefined, started);
      return;
    }
    if (summary.canceled || this.#deps.context.isShuttingDown()) return;
    this.#failures++;
    this.#cooldown = cooldownTurns(this.#failures);
    await this.#append({
      name: "context-reduction-failed",
      metadata: contextFailedMetadata(summary.reason, this.#failures, this.#cooldown, "checkpoint"),
    });
  }

  /** The model's summary of the whole conversation, each tool result cut to fit the window's summary share. */
  #checkpointSummary(note: string | undefined): Promise<Summary> {
    const maxResultChars = Math.floor(this.windowTokens * MAX_SUMMARY_SHARE * 4);
    return this.#summaryOf(
      [...boundedForSummary(this.#deps.history, maxResultChars), { role: "user", text: checkpointInstruction(note) }],
      "checkpoint",
    );
  }

  /** Write the checkpoint row, then rewrite the conversation as a rebuild will. */
  async #commitCheckpoint(
    summary: { text: string; usage: TokenUsage },
    note: string | undefined,
    started: number,
  ): Promise<CheckpointResult> {
    const { context, history } = this.#deps;
    const elapsed = () => Math.round(performance.now() - started);
    const after = [checkpointMessage(summary.text, note)];
    const model = context.model.name;
    const cost = priceUsage(summary.usage, context.pricing.rates(model));
    const record: CheckpointRecord = {
      summary: summary.text,
      ...(note !== undefined ? { taskNote: note } : {}),
      messagesSummarized: history.length,
      charsSummarized: conversationChars(history),
      charsAfter: conversationChars(after),
      model,
      usage: summary.usage,
      cost,
    };
    const eventId = await this.#append({
      author: CHECKPOINT_AUTHOR,
      name: CHECKPOINT_EVENT,
      metadata: checkpointMetadata(record),
    });
    history.splice(0, history.length, ...after);
    this.#deps.renewConversationKey();
    this.#stats = countCheckpoint(this.#stats, record);
    this.#countUsage(model, summary.usage, cost);
    return {
      eventId,
      summary: summary.text,
      ...(note !== undefined ? { taskNote: note } : {}),
      durationMs: elapsed(),
      skipped: false,
    };
  }

  async #announceAssumedWindow(): Promise<void> {
    const context = this.#deps.context;
    if (
      context.model.contextWindowTokens !== undefined ||
      context.model.provider === "echo" ||
      context.model.provider === "scripted"
    )
      return;
    if (!context.announceOnce("window-unknown")) return;
    const detail = `the context window of ${context.model.name} is not configured; compaction assumes ${ASSUMED_WINDOW_TOKENS} tokens (set --model-context-window)`;
    await this.#append({
      name: "context-reduction-degraded",
      metadata: contextDegradedMetadata("window-unknown", detail),
    });
  }

  async #mechanical(plan: CompactionPlan): Promise<void> {
    if (this.#deps.context.announceOnce("mechanical-compaction")) {
      const detail =
        "the model could not summarize the conversation and it no longer fits the context window: older turns were dropped with a mechanical summary";
      await this.#append({
        name: "context-reduction-degraded",
        metadata: contextDegradedMetadata("mechanical-compaction", detail),
      });
    }
    const maxChars = Math.floor(this.windowTokens * MAX_SUMMARY_SHARE * 4);
    await this.#commit(
      plan,
      mechanicalSummary(this.#deps.history.slice(0, plan.summarize), maxChars),
      true,
      false,
      undefined,
      performance.now(),
    );
  }

  /** The model's summary of the messages the plan replaces, on a turn worker with no tools. */
  #summarize(plan: CompactionPlan, focus?: string): Promise<Summary> {
    return this.#summaryOf(
      [...this.#deps.history.slice(0, plan.summarize), { role: "user", text: compactionInstruction(focus) }],
      "compact",
    );
  }

  /** One bare model call over `conversation` whose answer must be a usable summary. */
  async #summaryOf(conversation: ChatMessage[], label: string): Promise<Summary> {
    const call = bareCall(this.#deps.context, conversation, label);
    this.#running = call;
    const outcome = await call.outcome;
    this.#running = undefined;
    if (outcome.status === "failed") return { ok: false, reason: outcome.message };
    if (outcome.status === "canceled")
      return { ok: false, reason: "the summary call was canceled (the daemon is stopping)", canceled: true };
    if (outcome.status === "empty" || outcome.text === "")
      return { ok: false, reason: "the model returned an empty summary" };
    if (outcome.toolCalls > 0) return { ok: false, reason: "the model asked for tools instead of summarizing" };
    const text = outcome.text;
    const limit = Math.floor(this.windowTokens * MAX_SUMMARY_SHARE);
    if (estimateTokens(text) > limit)
      return { ok: false, reason: `the summary (about ${estimateTokens(text)} tokens) is longer than ${limit} tokens` };
    return { ok: true, text, usage: outcome.usage };
  }

  /** Write the compaction row, then rewrite the conversation exactly as a rebuild will. */
  async #commit(
    plan: CompactionPlan,
    summary: string,
    mechanical: boolean,
    manual: boolean,
    usage: TokenUsage | undefined,
    started: number,
  ): Promise<CompactionResult> {
    const { context, history } = this.#deps;
    const after = compactedConversation(history, summary, plan.keep);
    // A summary that saves nothing is not worth a row (and would repeat every turn).
    if (conversationChars(after) >= conversationChars(history))
      return { durationMs: Math.round(performance.now() - started), skipped: true };
    const record: CompactionRecord = {
      summary,
      messagesSummarized: plan.summarize,
      messagesKept: plan.keep,
      charsSummarized: conversationChars(history.slice(0, plan.summarize)),
      charsAfter: conversationChars(after),
      mechanical,
      manual,
    };
    if (usage) {
      record.model = context.model.name;
      record.usage = usage;
      record.cost = priceUsage(usage, context.pricing.rates(context.model.name));
    }
    const eventId = await this.#append({
      author: COMPACTION_AUTHOR,
      name: COMPACTION_EVENT,
      metadata: compactionMetadata(record),
    });
    history.splice(0, history.length, ...after);
    this.#deps.renewConversationKey();
    this.#stats = countCompaction(this.#stats, record);
    if (record.model !== undefined && record.usage && record.cost)
      this.#countUsage(record.model, record.usage, record.cost);
    return { eventId, summary, durationMs: Math.round(performance.now() - started), skipped: false };
  }

  /** A summary call's usage counts in the session's totals (not as a turn); subscribers see the new totals. */
  #countUsage(model: string, usage: TokenUsage, cost: TurnCost): void {
    this.#deps.ledger.recordExtra(model, usage, cost);
    this.#deps.journal.frame({ type: "usage-update", ...this.#deps.ledger.toUsageUpdate() });
  }

  async #append(row: { author?: string; name: string; metadata: Record<string, unknown> }): Promise<string> {
    const invocationId = `c-${uuidv7()}`;
    const event: AuditEvent = {
      ...this.#deps.journal.header(invocationId, row.author ?? CONTEXT_REDUCTION_AUTHOR),
      kind: "audit",
      name: row.name,
      metadata: row.metadata,
    };
    await this.#deps.journal.append([event]);
    return event.id;
  }
}

/**
 * A manual summary that failed: the model call failed or gave nothing usable (500, D373); one a
 * stopping daemon canceled is 503.
 */
function summaryFailed(summary: { reason: string; canceled?: boolean }): SparError {
  return summary.canceled
    ? new SparError("shutting_down", `the summary call was canceled: ${summary.reason}`)
    : new SparError("model_failed", `the model could not summarize the conversation: ${summary.reason}`);
}
