/**
 * SessionActor: one live session on the main thread, and its scheduler: one execution at a time,
 * messages queued meanwhile drained together by the next, nothing started while the session is
 * parked, halted, compacting, retired or the daemon stops. What an execution does is its
 * Executor's (today the model turn, TurnExecutor); what the session records goes through its one
 * SessionJournal. Inbox, conversation, operator controls, guardrails, auto-continue: collaborators.
 */
import type { CommittedRow, LiveFrame, ToolResultEvent } from "../core/events.ts";
import type { ResetRequest } from "../core/guardrails.ts";
import { uuidv7 } from "../core/ids.ts";
import type { ResumeMode } from "../core/pause-gate.ts";
import { type SessionKey, sessionKeyString } from "../core/session-key.ts";
import type { InboxItem, SessionAbort, SessionRecord } from "../core/session-store.ts";
import type { UsageInfo } from "../core/usage.ts";
import { GatedTools } from "./gated-tools.ts";
import { type ContextInfo, findToolResult, readAllRows, usageInfoOf } from "./history.ts";
import type { CheckpointResult, CompactionResult } from "./compactor.ts";
import { type SideAnswer, askAside } from "./side-question.ts";
import { archivePlan } from "./replan.ts";
import { SparError } from "../core/errors.ts";
import { closedPrompts } from "./prompt-broker.ts";
import { planRecordedIn } from "../core/plan-gate.ts";
import { type FeedSink, SessionFeed, type Subscription } from "./session-feed.ts";
import { type ResetOutcome, SessionGuards } from "./session-guards.ts";
import { SessionRecordKeeper } from "./session-record.ts";
import { StartRetry } from "./start-retry.ts";
import type { Execution, Executor, ExecutorFactory } from "./executor.ts";
import { type EnqueueOptions, SessionInbox } from "./session-inbox.ts";
import { SessionConversation } from "./session-conversation.ts";
import { SessionJournal } from "./session-journal.ts";
import { turnExecutor } from "./turn-executor.ts";
import type { ArmedContinue } from "./continue-slot.ts";
import { ContinueOffers } from "./continue-offers.ts";
import { OperatorControls } from "./operator-controls.ts";
import { SessionAbortMarker } from "./session-abort.ts";
import type { ActorContext, InjectResult, InterruptResult, ReplanResult, StatusInfo } from "./actor-types.ts";
import { ZERO_TIME } from "../core/zero-time.ts";
import { ownRows, subtaskTotals, foldInstances } from "../core/subagents.ts";
import { SessionSubagents } from "./session-subagents.ts";
import {
  type ScheduledWake,
  WAKE_FIRED,
  WAKE_LOOP_AUTHOR,
  foldWakeLoop,
  wakeIdempotencyKey,
  wakePrompt,
} from "../core/wake-loop.ts";

export type { ActorContext, InjectResult, InterruptResult, StatusInfo } from "./actor-types.ts";

export class SessionActor {
  readonly key: SessionKey;
  readonly feed: SessionFeed;
  /** The durable row (owner, ACL, title, last_touched_at) and the activity clock. */
  readonly #recordKeeper: SessionRecordKeeper;
  readonly #context: ActorContext;
  /** Every row and frame of this session goes through it. */
  readonly #journal: SessionJournal;
  /** Runs the work this scheduler starts (a model turn). */
  readonly #executor: Executor;
  /** The conversation, its usage ledger and its compaction. */
  readonly #conversation: SessionConversation;
  /** Messages waiting for a turn, and a bare wake; closed once the session is retired. */
  readonly #inbox: SessionInbox;
  /** The pause gate and the operator's interrupt, pause and resume. */
  readonly #operator: OperatorControls;
  /** Set once the session is aborted: terminal, no turn of any kind starts again. */
  readonly #abort: SessionAbortMarker;
  /** Failed turns in a row with no clean turn since (wake-loop readiness). */
  #failedInARow = 0;
  /** It has scheduled a wake (D363): a wake loop, counted by the `wake_loops` readiness check. */
  #isLoop: boolean;
  /** Invocation id of the execution in flight (from its start until its end is booked). */
  #running: string | undefined;
  /** An execution is being prepared (pre-flight, inbox drain) but has not been handed to the executor. */
  #starting = false;
  #executionDone: Promise<void> = Promise.resolve();
  /** Auto-continue: the sequence, the restart-cut turn, and the continue turn waiting to run. */
  readonly #continues: ContinueOffers;
  /** Pending while a turn that could not start (store refusing writes) waits to be retried. */
  readonly #startRetry = new StartRetry();

  /** The permission gate and its prompts (live only: a rebuild starts from the configuration). */
  readonly tools: GatedTools;
  /** Watchdog and cost ceiling, restored from the log under the current configuration. */
  readonly guards: SessionGuards;
  /** The session's subagent instances (D351): their rows are in its log under their labels. */
  readonly subagents: SessionSubagents;

  private constructor(
    context: ActorContext,
    record: SessionRecord,
    allRows: readonly CommittedRow[],
    pending: InboxItem[],
    executorFor: ExecutorFactory,
  ) {
    // The session's own conversation, usage and turns: rows its subagents wrote are theirs (D351).
    const rows =
      allRows.length > 0 && allRows.some((row) => row.event.branch !== undefined) ? ownRows(allRows) : allRows;
    this.#context = context;
    this.#recordKeeper = new SessionRecordKeeper(record, context);
    this.key = { app: record.app, id: record.id };
    this.#abort = new SessionAbortMarker(this.key, record.abort, { store: context.store, now: () => context.now() });
    this.feed = new SessionFeed(this.key, context.store, allRows[allRows.length - 1]?.seq ?? 0);
    const journal = new SessionJournal({ key: this.key, log: context.store, feed: this.feed, clock: context });
    this.#journal = journal;
    const conversation = new SessionConversation(context, journal, rows);
    this.#conversation = conversation;
    this.#inbox = new SessionInbox(pending, { key: this.key, context, journal });
    this.#continues = new ContinueOffers(
      {
        key: this.key,
        context,
        retired: () => this.#inbox.closed || this.#abort.marker !== undefined,
        halted: () => this.guards.halted !== undefined,
        turnInFlight: () => this.#running,
        journal,
        schedule: () => this.schedule(),
      },
      rows,
    );
    this.#operator = new OperatorControls({
      now: () => context.now(),
      journal,
      inFlight: () => this.#running,
      cancel: (invocationId, cause) => this.#executor.cancel(invocationId, cause),
      executionDone: () => this.#executionDone,
      clearContinue: () => this.#continues.withdraw(),
      cancelCompaction: () => conversation.cancelCompaction(),
      pending: this.#inbox.items,
      inject: (message, wake) => this.inject(message, wake, { capped: false }),
      schedule: () => this.schedule(),
    });
    this.tools = new GatedTools(
      { settings: context.permissions, now: () => context.now(), journal },
      closedPrompts(allRows),
      planRecordedIn(allRows),
    );
    // The session's spend includes what its subagents spent.
    const subtaskCost = subtaskTotals(foldInstances(allRows)).costUsd;
    this.guards = new SessionGuards(context.guardrails, rows, conversation.ledger.sessionCostUsd + subtaskCost, {
      journal,
      sessionCostUsd: () => conversation.ledger.sessionCostUsd + this.subagents.subtasks().costUsd,
      logWarning: (message) => context.logError(`session ${sessionKeyString(this.key)}: ${message}`),
    });
    this.subagents = new SessionSubagents(
      {
        key: this.key,
        context,
        journal,
        guards: this.guards,
        tools: this.tools,
        report: (text) => this.#report(text),
        touched: () => {
          this.#recordKeeper.touch();
          this.#recordKeeper.persistTouch();
        },
      },
      allRows,
    );
    this.#isLoop = foldWakeLoop(rows).isLoop;
    const wakeLoop = context.wakeLoop;
    this.#executor = executorFor({
      key: this.key,
      context,
      journal,
      conversation,
      tools: this.tools,
      guards: this.guards,
      subagents: this.subagents,
      ...(wakeLoop === undefined
        ? {}
        : {
            loop: {
              scheduled: (wake: ScheduledWake) => {
                this.#isLoop = true;
                wakeLoop.arm(this.key, wake);
              },
            },
          }),
    });
  }

  /**
   * Rebuild a session from its durable row, its log and its undrained inbox. `executorFor` builds
   * what runs its work (model turns unless told otherwise).
   */
  static async load(context: ActorContext, record: SessionRecord, executorFor = turnExecutor): Promise<SessionActor> {
    const key = { app: record.app, id: record.id };
    const rows = await readAllRows(context.store, key);
    const pending = await context.store.pendingInbox(key);
    const actor = new SessionActor(context, record, rows, pending, executorFor);
    await actor.subagents.recordCuts();
    return actor;
  }

  /**
   * A session its host has just created: nothing in its log or inbox yet, so nothing is read back
   * from the store (a rebuild from an empty log and inbox builds the same actor).
   */
  static fresh(context: ActorContext, record: SessionRecord, executorFor = turnExecutor): SessionActor {
    return new SessionActor(context, record, [], [], executorFor);
  }

  /** Names this session's conversation in the turn workers' cache (a rebuilt actor gets a new one). */
  get conversationKey(): string {
    return this.#conversation.key;
  }

  get record(): SessionRecord {
    const record = this.#recordKeeper.record;
    const abort = this.#abort.marker;
    return abort && !record.abort ? { ...record, abort } : record;
  }

  /** Adopt ACL lists already committed to the store. */
  adoptAcl(viewers: string[], contributors: string[]): void {
    this.#recordKeeper.adoptAcl(viewers, contributors);
  }

  /** Failed turns in a row with no clean turn since. */
  get failedInARow(): number {
    return this.#failedInARow;
  }

  /** It has scheduled a wake at least once (D363). */
  get isLoop(): boolean {
    return this.#isLoop;
  }

  get turnInFlight(): boolean {
    return this.#running !== undefined;
  }

  get pendingCount(): number {
    return this.#inbox.items.length;
  }

  get lastActivity(): number {
    return this.#recordKeeper.lastActivity;
  }

  /**
   * Evictable: nothing running, nothing queued or armed, nobody attached, and not a wake loop
   * whose last turn failed (D363: its failure stays counted until a clean turn; a sleeping loop
   * may leave memory, the host keeps its timer).
   */
  isQuiet(): boolean {
    return (
      !(this.#isLoop && this.#failedInARow > 0) &&
      this.#inbox.empty &&
      this.#running === undefined &&
      !this.#starting &&
      !this.#conversation.compacting &&
      !this.#continues.slot.occupied &&
      !this.#startRetry.pending &&
      !this.subagents.busy &&
      this.feed.subscriberCount === 0
    );
  }

  /**
   * Queue the message (SessionInbox: refused past the caps unless `capped: false`, the operator's
   * steer on resume; a repeated idempotency key answers `duplicate`) and wake a turn unless asked not to.
   */
  async inject(message: string, wake: boolean, options: EnqueueOptions = {}): Promise<InjectResult> {
    this.#inbox.refuseIfClosed();
    this.#abort.refuseIfAborted();
    this.#refuseIfHeld();
    this.#recordKeeper.touch();
    const { promptId, duplicate } = await this.#inbox.enqueue(message, wake, options);
    if (duplicate) return { promptId, woke: false, duplicate };
    if (wake) this.schedule();
    const halted = this.guards.halted;
    if (halted) return { promptId, woke: false, halted };
    // A parked session starts no turn until /resume (1.11.0): the message waits, nothing woke.
    return { promptId, woke: wake && !this.#operator.gate.paused };
  }

  /** POST /wake: optional prompt injected, a `wake` frame, and a turn. */
  async wake(prompt: string | undefined): Promise<InjectResult | undefined> {
    this.#inbox.refuseIfClosed();
    this.#abort.refuseIfAborted();
    this.#refuseIfHeld();
    this.#recordKeeper.touch();
    const injected = prompt ? await this.inject(prompt, true) : undefined;
    this.#journal.frame({ type: "wake", at: this.#context.now().toISOString() });
    if (!injected) {
      this.#inbox.wakeBare();
      this.schedule();
    }
    return injected;
  }

  /**
   * A scheduled wake is due (D360): its prompt is queued (past the caps, under an idempotency key
   * derived from the schedule, so a second firing after a restart is a duplicate), then the
   * `wake-fired` row, then a `wake` frame (not for a duplicate).
   */
  async fireScheduledWake(wake: ScheduledWake): Promise<void> {
    const injected = await this.inject(wakePrompt(wake), true, {
      capped: false,
      idempotencyKey: wakeIdempotencyKey(wake),
    });
    await this.#journal.append([
      {
        ...this.#journal.header("wake-loop", WAKE_LOOP_AUTHOR),
        kind: "audit",
        name: WAKE_FIRED,
        metadata: {
          id: wake.id,
          at: wake.at,
          prompt_id: injected.promptId,
          ...(injected.duplicate ? { duplicate: true } : {}),
        },
      },
    ]);
    if (!injected.duplicate) this.#journal.frame({ type: "wake", at: this.#context.now().toISOString() });
  }

  /**
   * A background subagent ended: its report is queued for the session's next turn (past the
   * inbox caps: the report of work the session started is never refused) with a `wake` frame.
   */
  async #report(text: string): Promise<void> {
    await this.inject(text, true, { capped: false });
    this.#journal.frame({ type: "wake", at: this.#context.now().toISOString() });
  }

  /** The executor's hold (svc's gate pause) refuses every inject and wake while it lasts. */
  #refuseIfHeld(): void {
    const held = this.#executor.hold?.();
    if (held) throw held;
  }

  /** Start a turn if one is due and none is running. */
  schedule(): void {
    if (
      this.#running !== undefined ||
      this.#starting ||
      this.#conversation.compacting ||
      this.#startRetry.pending ||
      this.#inbox.closed ||
      this.#abort.marker !== undefined ||
      this.#operator.gate.paused ||
      this.#executor.hold?.() !== undefined ||
      this.#context.isShuttingDown()
    )
      return;
    if (!this.#inbox.due && !this.#continues.slot.ready) return;
    this.#starting = true;
    this.#executionDone = this.#run().catch((error: unknown) => {
      this.#context.logError(`session ${this.key.app}/${this.key.id}: turn failed: ${String(error)}`);
    });
  }

  /** The session is being deleted: no turn starts again; the running one is cancelled. */
  async retire(): Promise<void> {
    this.#inbox.close();
    await this.subagents.stopAll();
    await this.cancelTurn();
    this.#executor.release?.();
  }

  /** The actor was evicted from memory (idle): what its executor's owner keeps for it is dropped. */
  evicted(): void {
    this.#executor.release?.();
  }

  /**
   * Abort (terminal): turns are refused from now on, the marker is committed to the session's row,
   * then the turn in flight is cancelled (cause `operator`); resolves once it has ended. 409 when
   * the session is aborted already. Queued messages stay in the store, never run.
   */
  async abort(reason: string, by: string): Promise<SessionAbort> {
    const marker = await this.#abort.mark(reason, by);
    this.#continues.withdraw();
    this.#startRetry.cancel();
    if (this.#running !== undefined) this.#executor.cancel(this.#running, "operator");
    this.#conversation.cancelCompaction();
    await this.#executionDone;
    return marker;
  }

  /** Call `listener` once the session's abort is committed; returns the unsubscribe. */
  onAbort(listener: (abort: SessionAbort) => void): () => void {
    return this.#abort.onAbort(listener);
  }

  /** Resolves when the execution in flight (if any) has ended by itself. */
  settled(): Promise<void> {
    return this.#executionDone;
  }

  /** Cancel the running turn (shutdown, delete); resolves when it has ended. */
  async cancelTurn(): Promise<void> {
    this.#continues.slot.clear();
    this.#startRetry.cancel();
    if (this.#running !== undefined) this.#executor.cancel(this.#running, "shutdown");
    this.#conversation.cancelCompaction();
    await this.#executionDone;
  }

  subscribe(sink: FeedSink, since: number): Subscription {
    this.#recordKeeper.touch();
    return this.feed.subscribe(sink, since);
  }

  status(): StatusInfo {
    const status: StatusInfo = {
      state: this.#operator.gate.paused ? "paused" : this.#running !== undefined ? "running" : "idle",
      model_name: this.#context.model.name,
      turn_in_flight: this.#running !== undefined,
      // D363: the pending schedule's time; the state stays `idle` while the session sleeps.
      next_wake_at: this.#context.wakeLoop?.pending(this.key)?.at ?? ZERO_TIME,
      ...(this.tools.currentTool === undefined ? {} : { current_tool: this.tools.currentTool }),
      paused_since: this.#operator.gate.since ?? ZERO_TIME,
    };
    if (this.#operator.gate.reason !== undefined) status.pause_reason = this.#operator.gate.reason;
    if (this.#conversation.compacting) status.compacting = true;
    return status;
  }

  /**
   * The status /status answers: `status()`, and an idle session whose executor says it waits on an
   * operator (svc's write gate, D342) reads `paused` with that reason and time.
   */
  async currentStatus(): Promise<StatusInfo> {
    const status = this.status();
    if (status.state !== "idle" || this.#executor.parked === undefined) return status;
    const parked = await this.#executor.parked();
    return parked === undefined
      ? status
      : { ...status, state: "paused", paused_since: parked.since, pause_reason: parked.reason };
  }

  /** POST /interrupt: cancel the turn in flight and, with `hold`, park the session (OperatorControls). */
  interrupt(hold: boolean, caller: string | undefined): Promise<InterruptResult> {
    return this.#operator.interrupt(hold, caller);
  }

  /** POST /pause: park (the running turn finishes; no new one starts). */
  pause(reason: string | undefined): { transitioned: boolean } {
    return this.#operator.pause(reason);
  }

  /** POST /resume: release the park (`continue`, `steer` or `abandon` what was queued). */
  resume(mode: ResumeMode, steer: string | undefined): Promise<{ resumed: boolean }> {
    return this.#operator.resume(mode, steer);
  }

  /** POST /guardrails/reset; a cleared session drains what waited in its inbox. */
  async resetGuardrails(request: ResetRequest, caller: string | undefined): Promise<ResetOutcome> {
    this.#recordKeeper.touch();
    const outcome = await this.guards.reset(request, caller);
    this.schedule();
    return outcome;
  }

  /** GET /usage: per-turn records no longer in memory are rebuilt from the log. */
  usageInfo(): Promise<UsageInfo> {
    return usageInfoOf(this.#conversation.ledger, () => readAllRows(this.#context.store, this.key));
  }

  /** GET /tool-results/{call_id}/raw (D354): the call's result row, raw result included, read from the log. */
  async toolResult(callId: string): Promise<ToolResultEvent | undefined> {
    return findToolResult(await readAllRows(this.#context.store, this.key), callId);
  }

  /** GET /context: the conversation's counters and what the session's subagents spent. */
  contextInfo(): ContextInfo & SubtaskInfo {
    const subtasks = this.subagents.subtasks();
    return {
      ...this.#conversation.contextInfo(),
      subtask_turns: subtasks.turns,
      subtask_input_tokens: subtasks.inputTokens,
      subtask_output_tokens: subtasks.outputTokens,
      subtask_cost_usd: subtasks.costUsd,
    };
  }

  /** POST /slash/compact: between turns only; no turn starts while it runs. */
  async compact(focus?: string): Promise<CompactionResult> {
    if (this.#running !== undefined || this.#starting || this.#conversation.compacting)
      throw new SparError("conflict", "a turn or compaction is running; compact after it ends");
    try {
      return await this.#conversation.compactNow(focus);
    } finally {
      this.schedule();
    }
  }

  /** POST /slash/done (D356): a checkpoint, between turns only; no turn starts while it runs. */
  async checkpoint(note?: string): Promise<CheckpointResult> {
    if (this.#running !== undefined || this.#starting || this.#conversation.compacting)
      throw new SparError("conflict", "a turn or compaction is running; mark the task done after it ends");
    this.#recordKeeper.touch();
    try {
      return await this.#conversation.checkpointNow(note);
    } finally {
      this.schedule();
    }
  }

  /** POST /slash/btw (D357): a side question; works while a turn runs and changes nothing of it. */
  ask(question: string): Promise<SideAnswer> {
    this.#recordKeeper.touch();
    return askAside(
      {
        context: this.#context,
        history: this.#conversation.history,
        ledger: this.#conversation.ledger,
        journal: this.#journal,
        status: () => this.status(),
        inboxDepth: () => this.#inbox.items.length,
        runningSubagents: () => this.subagents.running(),
      },
      question,
    );
  }

  /** POST /slash/replan (D358): archive the active plan file. */
  replan(reason: string | undefined, caller: string | undefined): Promise<ReplanResult> {
    this.#recordKeeper.touch();
    return archivePlan({ key: this.key, plans: this.#context.plans, journal: this.#journal }, reason, caller);
  }

  /** POST /title (D359): set or (with `""`) clear the title. */
  setTitle(title: string): Promise<{ title?: string; persisted: boolean; detail?: string }> {
    this.#recordKeeper.touch();
    return this.#recordKeeper.setTitle(title);
  }

  usageFrame(): LiveFrame {
    return { type: "usage-update", ...this.#conversation.ledger.toUsageUpdate() };
  }

  /**
   * After a (re)start: offer the turn a restart cut to auto-continue, unless inbox work is
   * waiting (that turn runs anyway and a human message starts a new sequence).
   */
  async offerRestartContinue(): Promise<void> {
    await this.#continues.offerRestart(this.#inbox.wakeWaiting);
    await this.subagents.carryOnCuts();
  }

  async #run(): Promise<void> {
    let execution: Execution | undefined;
    try {
      execution = await this.#prepare();
      // Aborted while the execution was being prepared: what it took goes back, nothing runs.
      if (execution && this.#abort.marker) {
        this.#inbox.giveBack(execution.items);
        execution = undefined;
      }
      if (execution) this.#running = execution.invocationId;
    } finally {
      this.#starting = false;
    }
    if (!execution) return;
    const started = execution;
    const deadline = this.#context.turnDeadlineMs;
    const timer =
      deadline > 0 ? setTimeout(() => this.#executor.cancel(started.invocationId, "deadline"), deadline) : undefined;
    try {
      const end = await this.#executor.execute(execution);
      if (!end) return;
      // Readiness: interrupted turns neither count as failures nor clear them. Then auto-continue.
      if (end.status === "completed") this.#failedInARow = 0;
      else if (end.status === "failed") this.#failedInARow++;
      this.#continues.afterTurn(execution.invocationId, end);
      // The turn has ended (its terminal frame and idle status are out): the automatic compaction
      // that may follow belongs to the session. No turn starts while it runs; /status reads idle
      // and /interrupt cancels it instead of waiting for it (D166).
      this.#running = undefined;
      await this.#conversation.compactAfterTurn((message) =>
        this.#context.logError(`session ${this.key.id}: ${message}`),
      );
    } finally {
      clearTimeout(timer);
      this.#running = undefined;
      this.#recordKeeper.touch();
      this.#recordKeeper.persistTouch();
      this.schedule();
    }
  }

  /** Guardrail pre-flight, then take what the execution will drain. Undefined: nothing starts. */
  async #prepare(): Promise<Execution | undefined> {
    const refused = await this.guards.preflight().catch((error: unknown) => {
      this.#context.logError(`session ${this.key.id}: guardrail pre-flight: ${String(error)}`);
      return this.guards.halted;
    });
    if (refused) {
      // No frames: the inbox keeps its messages until a reset (docs/agent.md#guardrails, Halted).
      this.#inbox.dropBareWake();
      this.#continues.withdraw();
      this.#context.turnRefused(refused.guardrail);
      return undefined;
    }
    const { items, bare } = this.#inbox.take();
    const armed = this.#continues.forNextTurn(items.length > 0);
    if (items.length === 0 && !bare && !armed) return undefined;
    return {
      invocationId: `e-${uuidv7()}`,
      promptId: items[0]?.promptId ?? armed?.promptId ?? uuidv7(),
      items,
      armed,
      started: (human) => this.#started(armed, human),
      refused: (error) => this.#refused(items, error),
    };
  }

  /** The execution's opening rows committed: the sequence, the session row and the retry delay follow. */
  #started(armed: ArmedContinue | undefined, human: string): void {
    this.#continues.started(armed);
    this.#recordKeeper.persistTouch();
    this.#recordKeeper.nameFrom(human);
    this.#startRetry.succeeded();
  }

  /** The store refused the execution's opening rows: its items go back to the inbox, retried later. */
  #refused(items: readonly InboxItem[], error: unknown): void {
    this.#inbox.giveBack(items);
    this.#context.logError(`session ${this.key.id}: could not start a turn: ${String(error)}`);
    this.#startRetry.later(() => this.schedule());
  }
}

/** /context's subagent counters (D351). */
export interface SubtaskInfo {
  subtask_turns: number;
  subtask_input_tokens: number;
  subtask_output_tokens: number;
  subtask_cost_usd: number;
}
