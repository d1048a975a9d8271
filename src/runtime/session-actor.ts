/**
 * SessionActor: one live session on the main thread, and its scheduler. Owns its durable inbox
 * mirror and when work runs: one execution at a time; messages queued meanwhile are drained
 * together by the next; nothing starts while the session is parked, halted, compacting, retired
 * or the daemon stops. What an execution does is its Executor's (today's model turn,
 * TurnExecutor); everything the session records goes through its SessionJournal, created here
 * once. Keeps the conversation and the usage ledger the turns work on.
 */
import type { CommittedRow, LiveFrame } from "../core/events.ts";
import type { ResetRequest } from "../core/guardrails.ts";
import { uuidv7 } from "../core/ids.ts";
import { InboxRoom } from "../core/inbox-room.ts";
import { idempotentPromptId } from "./idempotent-prompt.ts";
import type { ResumeMode } from "../core/pause-gate.ts";
import type { ChatMessage } from "../core/model.ts";
import { type SessionKey, sessionKeyString } from "../core/session-key.ts";
import type { InboxItem, SessionRecord } from "../core/session-store.ts";
import type { UsageInfo } from "../core/usage.ts";
import { GatedTools } from "./gated-tools.ts";
import { type ContextInfo, contextInfoOf, readAllRows, rebuildFromRows, usageInfoOf } from "./history.ts";
import { type CompactionResult, Compactor } from "./compactor.ts";
import { SparError } from "../core/errors.ts";
import { closedPrompts } from "./prompt-broker.ts";
import { type FeedSink, SessionFeed, type Subscription } from "./session-feed.ts";
import { type ResetOutcome, SessionGuards } from "./session-guards.ts";
import { SessionRecordKeeper } from "./session-record.ts";
import { StartRetry } from "./start-retry.ts";
import type { Execution, ExecutionEnd, Executor, ExecutorFactory } from "./executor.ts";
import { SessionJournal } from "./session-journal.ts";
import { turnExecutor } from "./turn-executor.ts";
import type { ArmedContinue } from "./continue-slot.ts";
import { ContinueOffers } from "./continue-offers.ts";
import { OperatorControls } from "./operator-controls.ts";
import type { ActorContext, InjectResult, InterruptResult, StatusInfo } from "./actor-types.ts";

export type { ActorContext, InjectResult, InterruptResult, StatusInfo } from "./actor-types.ts";

const ZERO_TIME = "0001-01-01T00:00:00Z";

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
  readonly #history: ChatMessage[];
  /** Names this actor's conversation in the turn workers' cache (a rebuilt actor gets a new one). */
  #conversationKey = `conv-${uuidv7()}`;

  /** Names this actor's conversation in the turn workers' cache (a rebuilt actor gets a new one). */
  get conversationKey(): string {
    return this.#conversationKey;
  }
  readonly #ledger;
  readonly #pending: InboxItem[];
  /** The inbox caps: an inject past them is refused before its row is written. */
  readonly #inboxRoom: InboxRoom;
  #bareWake = false;
  #retired = false;
  /** The pause gate and the operator's interrupt, pause and resume. */
  readonly #operator: OperatorControls;
  /** Failed turns in a row with no clean turn since (wake-loop readiness). */
  #failedInARow = 0;
  /** Requests between their first await and their effect (an eviction must wait for them). */
  #busy = 0;
  /** Invocation id of the execution in flight (from its start until its end is booked). */
  #running: string | undefined;
  /** An execution is being prepared (pre-flight, inbox drain) but has not been handed to the executor. */
  #starting = false;
  #executionDone: Promise<void> = Promise.resolve();
  /** Auto-continue: the sequence, the restart-cut turn, and the continue turn waiting to run. */
  readonly #continues: ContinueOffers;
  /** Pending while a turn that could not start (store refusing writes) waits to be retried. */
  readonly #startRetry = new StartRetry();
  /** Automatic and manual compaction of the conversation (D155). */
  readonly #compactor: Compactor;
  #compacting = false;

  /** The permission gate and its prompts (live only: a rebuild starts from the configuration). */
  readonly tools: GatedTools;
  /** Watchdog and cost ceiling, restored from the log under the current configuration. */
  readonly guards: SessionGuards;

  private constructor(
    context: ActorContext,
    record: SessionRecord,
    rows: readonly CommittedRow[],
    pending: InboxItem[],
    executorFor: ExecutorFactory,
  ) {
    this.#context = context;
    this.#recordKeeper = new SessionRecordKeeper(record, {
      store: context.store,
      now: () => context.now(),
      logError: (message) => context.logError(message),
    });
    this.key = { app: record.app, id: record.id };
    this.feed = new SessionFeed(this.key, context.store, rows[rows.length - 1]?.seq ?? 0);
    const journal = new SessionJournal({
      key: this.key,
      log: context.store,
      feed: this.feed,
      now: () => context.now(),
    });
    this.#journal = journal;
    const state = rebuildFromRows(rows);
    this.#history = state.history;
    this.#ledger = state.ledger;
    this.#compactor = new Compactor(
      {
        context,
        history: this.#history,
        ledger: this.#ledger,
        journal,
        renewConversationKey: () => {
          context.pool.forget(this.#conversationKey);
          this.#conversationKey = `conv-${uuidv7()}`;
        },
      },
      state.context,
    );
    this.#pending = pending;
    this.#inboxRoom = new InboxRoom(context.inboxCaps);
    this.#continues = new ContinueOffers(
      {
        key: this.key,
        context,
        retired: () => this.#retired,
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
      cancelCompaction: () => this.#compactor.cancel(),
      pending,
      inject: (message, wake) => this.inject(message, wake, { capped: false }),
      schedule: () => this.schedule(),
    });
    this.tools = new GatedTools(
      { settings: context.permissions, now: () => context.now(), journal },
      closedPrompts(rows),
    );
    this.guards = new SessionGuards(context.guardrails, rows, this.#ledger.sessionCostUsd, {
      journal,
      sessionCostUsd: () => this.#ledger.sessionCostUsd,
      logWarning: (message) => context.logError(`session ${sessionKeyString(this.key)}: ${message}`),
    });
    this.#executor = executorFor({
      key: this.key,
      context,
      journal,
      history: this.#history,
      ledger: this.#ledger,
      tools: this.tools,
      guards: this.guards,
      conversationKey: () => this.#conversationKey,
    });
  }

  /**
   * Rebuild a session from its durable row, its log and its undrained inbox. `executorFor` builds
   * what runs its work (model turns unless told otherwise).
   */
  static async load(
    context: ActorContext,
    record: SessionRecord,
    executorFor: ExecutorFactory = turnExecutor,
  ): Promise<SessionActor> {
    const key = { app: record.app, id: record.id };
    const rows = await readAllRows(context.store, key);
    const pending = await context.store.pendingInbox(key);
    return new SessionActor(context, record, rows, pending, executorFor);
  }

  get record(): SessionRecord {
    return this.#recordKeeper.record;
  }

  /** Adopt ACL lists already committed to the store. */
  adoptAcl(viewers: string[], contributors: string[]): void {
    this.#recordKeeper.adoptAcl(viewers, contributors);
  }

  /** Failed turns in a row with no clean turn since. */
  get failedInARow(): number {
    return this.#failedInARow;
  }

  get turnInFlight(): boolean {
    return this.#running !== undefined;
  }

  get pendingCount(): number {
    return this.#pending.length;
  }

  get lastActivity(): number {
    return this.#recordKeeper.lastActivity;
  }

  /** Evictable: nothing running, nothing queued or armed, nobody attached. */
  isQuiet(): boolean {
    return (
      this.#busy === 0 &&
      this.#running === undefined &&
      !this.#starting &&
      !this.#compacting &&
      this.#pending.length === 0 &&
      !this.#bareWake &&
      !this.#continues.slot.occupied &&
      !this.#startRetry.pending &&
      this.feed.subscriberCount === 0
    );
  }
  /**
   * Commit the message to the inbox, publish `inbox` queued, and wake a turn unless asked not to.
   * Past the inbox caps a caller's message is refused (429) before anything is written; the
   * operator's steer on resume (`capped: false`) is not, since the resume already happened. With
   * an idempotency key a message already injected under it is answered `duplicate` and nothing is
   * written or published again.
   */
  async inject(
    message: string,
    wake: boolean,
    options: { capped?: boolean; idempotencyKey?: string } = {},
  ): Promise<InjectResult> {
    this.#refuseIfRetired();
    this.#recordKeeper.touch();
    const promptId =
      options.idempotencyKey === undefined
        ? uuidv7()
        : idempotentPromptId(sessionKeyString(this.key), options.idempotencyKey);
    if (options.idempotencyKey !== undefined && this.#pending.some((waiting) => waiting.promptId === promptId))
      return { promptId, woke: false, duplicate: true };
    const item: InboxItem = { promptId, message, queuedAt: this.#context.now().toISOString(), wake };
    const releaseRoom = options.capped === false ? () => {} : this.#inboxRoom.reserve(this.#pending, message);
    this.#busy++;
    try {
      await this.#context.store.enqueueInbox(this.key, item);
      // A DELETE that began meanwhile removes the inbox with the session: tell the caller so.
      this.#refuseIfRetired();
      this.#pending.push(item);
    } catch (error) {
      // The store holds this prompt id already: the keyed message was injected before (and maybe drained).
      if (options.idempotencyKey !== undefined && error instanceof SparError && error.code === "conflict")
        return { promptId, woke: false, duplicate: true };
      throw error;
    } finally {
      this.#busy--;
      releaseRoom();
    }
    this.#journal.frame({ type: "inbox", state: "queued", prompt_id: item.promptId, queued_at: item.queuedAt });
    if (wake) this.schedule();
    // A parked session starts no turn until /resume (1.11.0): the message waits, nothing woke.
    const result: InjectResult = { promptId: item.promptId, woke: wake && !this.#operator.gate.paused };
    const halted = this.guards.halted;
    if (halted) {
      result.woke = false;
      result.halted = halted;
    }
    return result;
  }

  /** POST /wake: optional prompt injected, a `wake` frame, and a turn. */
  async wake(prompt: string | undefined): Promise<InjectResult | undefined> {
    this.#refuseIfRetired();
    this.#recordKeeper.touch();
    const injected = prompt ? await this.inject(prompt, true) : undefined;
    this.#journal.frame({ type: "wake", at: this.#context.now().toISOString() });
    if (!injected) {
      this.#bareWake = true;
      this.schedule();
    }
    return injected;
  }

  /** Start a turn if one is due and none is running. */
  schedule(): void {
    if (
      this.#running !== undefined ||
      this.#starting ||
      this.#compacting ||
      this.#startRetry.pending ||
      this.#retired ||
      this.#operator.gate.paused ||
      this.#context.isShuttingDown()
    )
      return;
    const due = this.#bareWake || this.#continues.slot.ready || this.#pending.some((item) => item.wake);
    if (!due) return;
    this.#starting = true;
    this.#executionDone = this.#run().catch((error: unknown) => {
      this.#context.logError(`session ${this.key.app}/${this.key.id}: turn failed: ${String(error)}`);
    });
  }

  /** The session is being deleted: no turn starts again; the running one is cancelled. */
  async retire(): Promise<void> {
    this.#retired = true;
    this.#startRetry.cancel();
    this.#continues.slot.clear();
    await this.cancelTurn();
  }

  /** Cancel the running turn (shutdown, delete); resolves when it has ended. */
  async cancelTurn(): Promise<void> {
    this.#continues.slot.clear();
    this.#startRetry.cancel();
    if (this.#running !== undefined) this.#executor.cancel(this.#running, "shutdown");
    this.#compactor.cancel();
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
      next_wake_at: ZERO_TIME,
      ...(this.tools.currentTool === undefined ? {} : { current_tool: this.tools.currentTool }),
      paused_since: this.#operator.gate.since ?? ZERO_TIME,
    };
    if (this.#operator.gate.reason !== undefined) status.pause_reason = this.#operator.gate.reason;
    if (this.#compacting) status.compacting = true;
    return status;
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
    return usageInfoOf(this.#ledger, () => readAllRows(this.#context.store, this.key));
  }

  /** GET /context. */
  contextInfo(): ContextInfo {
    return contextInfoOf(this.#compactor.stats);
  }

  /** POST /slash/compact: between turns only; no turn starts while it runs. */
  async compact(focus?: string): Promise<CompactionResult> {
    if (this.#running !== undefined || this.#starting || this.#compacting)
      throw new SparError("conflict", "a turn or compaction is running; compact after it ends");
    this.#compacting = true;
    try {
      return await this.#compactor.compactNow(focus);
    } finally {
      this.#compacting = false;
      this.schedule();
    }
  }

  usageFrame(): LiveFrame {
    return { type: "usage-update", ...this.#ledger.toUsageUpdate() };
  }

  /**
   * After a (re)start: offer the turn a restart cut to auto-continue, unless inbox work is
   * waiting (that turn runs anyway and a human message starts a new sequence).
   */
  async offerRestartContinue(): Promise<void> {
    await this.#continues.offerRestart(this.#pending.some((item) => item.wake));
  }

  /** A session being deleted takes no more work; to its callers it is already gone. */
  #refuseIfRetired(): void {
    if (this.#retired) throw new SparError("not_found", `session not found: ${this.key.id}`);
  }

  async #run(): Promise<void> {
    let execution: Execution | undefined;
    try {
      execution = await this.#prepare();
      if (execution) this.#running = execution.invocationId;
    } finally {
      this.#starting = false;
    }
    if (!execution) return;
    try {
      const end = await this.#executor.execute(execution);
      if (!end) return;
      this.#afterExecution(execution.invocationId, end);
      // The turn has ended (its terminal frame and idle status are out): the automatic compaction
      // that may follow belongs to the session. No turn starts while it runs; /status reads idle
      // and /interrupt cancels it instead of waiting for it (D166).
      this.#running = undefined;
      this.#compacting = true;
      try {
        await this.#compactor
          .afterTurn()
          .catch((error: unknown) => this.#context.logError(`session ${this.key.id}: compaction: ${String(error)}`));
      } finally {
        this.#compacting = false;
      }
    } finally {
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
      // No frames: the inbox keeps its messages until a reset (spec: turn refused while halted).
      this.#bareWake = false;
      this.#continues.withdraw();
      this.#context.turnRefused(refused.guardrail);
      return undefined;
    }
    const items = this.#pending.splice(0);
    const bare = this.#bareWake;
    this.#bareWake = false;
    // A human message supersedes a waiting continue turn (armed or still in its backoff).
    let armed: ArmedContinue | undefined;
    if (items.length > 0) this.#continues.withdraw();
    else armed = this.#continues.slot.take();
    if (items.length === 0 && !bare && !armed) return undefined;
    const invocationId = `e-${uuidv7()}`;
    return {
      invocationId,
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
    this.#pending.unshift(...items);
    this.#context.logError(`session ${this.key.id}: could not start a turn: ${String(error)}`);
    this.#startRetry.later(() => this.schedule());
  }

  /** Readiness bookkeeping, then auto-continue for a transient failure or an output-cap cut. */
  #afterExecution(invocationId: string, end: ExecutionEnd): void {
    // Interrupted turns neither count as failures nor clear them.
    if (end.status === "completed") this.#failedInARow = 0;
    else if (end.status === "failed") this.#failedInARow++;
    this.#continues.afterTurn(invocationId, end);
  }
}
