/**
 * SessionActor: one live session on the main thread. Owns its durable inbox mirror, turn
 * scheduling (one turn at a time; messages queued meanwhile are drained together by the next
 * turn), the conversation, the usage ledger, and its ordered publication feed. Turns execute on
 * the worker pool; every row a turn produces is committed here before the worker goes on.
 */
import type { LiveFrame, ModelResponseEvent, SessionEvent, ToolCall, ToolResultEvent } from "../core/events.ts";
import { uuidv7 } from "../core/ids.ts";
import { bundleInbox, titleFromPrompt } from "../core/inbox-bundle.ts";
import { PauseGate, type ResumeMode, steerMessage } from "../core/pause-gate.ts";
import type { ChatMessage, ModelSpec } from "../core/model.ts";
import type { SessionKey } from "../core/session-key.ts";
import type { InboxItem, SessionRecord, Store } from "../core/session-store.ts";
import { CANCELED_TURN, classifyTurnFailure } from "../core/turn-errors.ts";
import { type UsageInfo, priceUsage } from "../core/usage.ts";
import type { ResponseDraft, ToolRunResult, TurnOutcome, WorkerRequest } from "./channel.ts";
import { GatedTools, type PermissionSettings } from "./gated-tools.ts";
import { TurnUsageAccumulator, eventToMessage, rebuildFromRows } from "./history.ts";
import { unansweredPrompts } from "./prompt-broker.ts";
import type { PricingTable } from "./pricing-table.ts";
import { type FeedSink, SessionFeed, type Subscription, framePublication, rowPublication } from "./session-feed.ts";
import type { RunningTurn, WorkerPool } from "./worker-pool.ts";

export interface ActorContext {
  store: Store;
  pool: WorkerPool;
  pricing: PricingTable;
  model: ModelSpec;
  agentName: string;
  maxSteps: number;
  nextScriptIndex(): number;
  now(): Date;
  isShuttingDown(): boolean;
  logError(message: string): void;
  /** Told once per finished turn (metrics). */
  turnEnded(status: TurnOutcome["status"]): void;
  permissions: PermissionSettings;
}

interface ActiveTurn {
  invocationId: string;
  promptId: string;
  startedAt: number;
  running: RunningTurn | undefined;
  usage: TurnUsageAccumulator;
  canceled: boolean;
}

export interface InjectResult {
  promptId: string;
  woke: boolean;
}

export interface StatusInfo {
  state: "idle" | "running" | "paused";
  model_name: string;
  turn_in_flight: boolean;
  next_wake_at: string;
  paused_since: string;
  pause_reason?: string;
  current_tool?: string;
}

export interface InterruptResult {
  interrupted: boolean;
  paused: boolean;
}

const ZERO_TIME = "0001-01-01T00:00:00Z";

export class SessionActor {
  readonly key: SessionKey;
  readonly feed: SessionFeed;
  #record: SessionRecord;
  readonly #context: ActorContext;
  readonly #history: ChatMessage[];
  /** Names this actor's conversation in the workers' caches; a rebuilt actor gets a new one. */
  readonly #conversationKey = `conv-${uuidv7()}`;
  readonly #ledger;
  readonly #pending: InboxItem[];
  #bareWake = false;
  #retired = false;
  readonly #gate = new PauseGate();
  /** Failed turns in a row with no clean turn since (wake-loop readiness). */
  #failedInARow = 0;
  /** Requests between their first await and their effect (an eviction must wait for them). */
  #busy = 0;
  #turn: ActiveTurn | undefined;
  #turnDone: Promise<void> = Promise.resolve();
  #lastActivity = Date.now();

  /** The permission gate and its prompts (live only: a rebuild starts from the configuration). */
  readonly tools: GatedTools;

  private constructor(context: ActorContext, record: SessionRecord, head: number, state: ReturnType<typeof rebuildFromRows>, pending: InboxItem[], unanswered: string[]) {
    this.#context = context;
    this.#record = record;
    this.key = { app: record.app, id: record.id };
    this.feed = new SessionFeed(this.key, context.store, head);
    this.tools = new GatedTools(
      {
        settings: context.permissions,
        now: () => context.now(),
        append: (events) => this.#append(events),
        header: (invocationId, author) => this.#header(invocationId, author),
        frame: (frame) => this.feed.frame(frame),
      },
      unanswered,
    );
    this.#history = state.history;
    this.#ledger = state.ledger;
    this.#pending = pending;
  }

  /** Rebuild a session from its durable row, its log and its undrained inbox. */
  static async load(context: ActorContext, record: SessionRecord): Promise<SessionActor> {
    const key = { app: record.app, id: record.id };
    const rows = [];
    for (let cursor = 0; ; ) {
      const page = await context.store.read(key, cursor, 5000);
      if (page.length === 0) break;
      rows.push(...page);
      cursor = page[page.length - 1]?.seq ?? cursor;
    }
    const head = rows[rows.length - 1]?.seq ?? 0;
    const pending = await context.store.pendingInbox(key);
    return new SessionActor(context, record, head, rebuildFromRows(rows), pending, unansweredPrompts(rows));
  }

  get record(): SessionRecord {
    return this.#record;
  }

  /** Adopt ACL lists already committed to the store. */
  adoptAcl(viewers: string[], contributors: string[]): void {
    this.#record = { ...this.#record, viewers, contributors };
  }

  /** Failed turns in a row with no clean turn since. */
  get failedInARow(): number {
    return this.#failedInARow;
  }

  get turnInFlight(): boolean {
    return this.#turn !== undefined;
  }

  get pendingCount(): number {
    return this.#pending.length;
  }

  get lastActivity(): number {
    return this.#lastActivity;
  }

  /** Cancel a turn: the worker stops, and prompts it waits on close (410 turn-ended). */
  #cancel(turn: ActiveTurn): void {
    turn.canceled = true;
    turn.running?.cancel();
    this.tools.endTurn(turn.invocationId).catch((error: unknown) => this.#context.logError(`session ${this.key.id}: closing prompts: ${String(error)}`));
  }

  /** Evictable: nothing running, nothing queued, nobody attached. */
  isQuiet(): boolean {
    return this.#busy === 0 && this.#turn === undefined && this.#pending.length === 0 && !this.#bareWake && this.feed.subscriberCount === 0;
  }

  /** Commit the message to the inbox, publish `inbox` queued, and wake a turn unless asked not to. */
  async inject(message: string, wake: boolean): Promise<InjectResult> {
    this.#touch();
    const item: InboxItem = { promptId: uuidv7(), message, queuedAt: this.#context.now().toISOString(), wake };
    this.#busy++;
    try {
      await this.#context.store.enqueueInbox(this.key, item);
    } finally {
      this.#busy--;
    }
    this.#pending.push(item);
    this.feed.frame({ type: "inbox", state: "queued", prompt_id: item.promptId, queued_at: item.queuedAt });
    if (wake) this.schedule();
    return { promptId: item.promptId, woke: wake };
  }

  /** POST /wake: optional prompt injected, a `wake` frame, and a turn. */
  async wake(prompt: string | undefined): Promise<InjectResult | undefined> {
    this.#touch();
    const injected = prompt ? await this.inject(prompt, true) : undefined;
    this.feed.frame({ type: "wake", at: this.#context.now().toISOString() });
    if (!injected) {
      this.#bareWake = true;
      this.schedule();
    }
    return injected;
  }

  /** Start a turn if one is due and none is running. */
  schedule(): void {
    if (this.#turn || this.#retired || this.#gate.paused || this.#context.isShuttingDown()) return;
    const due = this.#bareWake || this.#pending.some((item) => item.wake);
    if (!due) return;
    this.#turnDone = this.#runTurn().catch((error: unknown) => {
      this.#context.logError(`session ${this.key.app}/${this.key.id}: turn failed: ${String(error)}`);
    });
  }

  /** The session is being deleted: no turn starts again; the running one is cancelled. */
  async retire(): Promise<void> {
    this.#retired = true;
    await this.cancelTurn();
  }

  /** Cancel the running turn (shutdown, delete); resolves when it has ended. */
  async cancelTurn(): Promise<void> {
    const turn = this.#turn;
    if (turn) {
      this.#cancel(turn);
    }
    await this.#turnDone;
  }

  subscribe(sink: FeedSink, since: number): Subscription {
    this.#touch();
    return this.feed.subscribe(sink, since);
  }

  status(): StatusInfo {
    const status: StatusInfo = {
      state: this.#gate.paused ? "paused" : this.#turn ? "running" : "idle",
      model_name: this.#context.model.name,
      turn_in_flight: this.#turn !== undefined,
      next_wake_at: ZERO_TIME,
      paused_since: this.#gate.since ?? ZERO_TIME,
    };
    if (this.#gate.reason !== undefined) status.pause_reason = this.#gate.reason;
    return status;
  }

  /**
   * POST /interrupt: cancel the turn in flight (its terminal frame is `turn-error` canceled) and,
   * with `hold`, park the session before anything queued can start. Writes the audit row once
   * the turn has unwound.
   */
  async interrupt(hold: boolean, caller: string | undefined): Promise<InterruptResult> {
    const turn = this.#turn;
    const parked = turn !== undefined && hold && this.#gate.pause("operator-interrupt", this.#context.now().toISOString());
    if (turn) {
      this.#cancel(turn);
      await this.#turnDone;
    }
    if (parked) this.feed.frame({ type: "pause", state: "paused", reason: "operator-interrupt", interrupted: true, at: this.#gate.since ?? "" });
    const metadata: Record<string, unknown> = { source: "operator", hold, interrupted: turn !== undefined };
    if (caller !== undefined) metadata.caller = caller;
    await this.#append([{ ...this.#header("attach-interrupt", "attach/interrupt"), kind: "audit", name: "attach-interrupt", metadata }]);
    return { interrupted: turn !== undefined, paused: this.#gate.paused };
  }

  /** POST /pause: park (the running turn finishes; no new one starts). */
  pause(reason: string | undefined): { transitioned: boolean } {
    const transitioned = this.#gate.pause(reason ?? "operator-pause", this.#context.now().toISOString());
    if (transitioned) this.feed.frame({ type: "pause", state: "paused", reason: this.#gate.reason ?? "operator-pause", at: this.#gate.since ?? "" });
    return { transitioned };
  }

  /**
   * POST /resume: release the park. `continue` runs what is queued; `steer` queues the operator's
   * text (framed as a steer) and runs; `abandon` drops what was queued (recorded, never run).
   */
  async resume(mode: ResumeMode, steer: string | undefined): Promise<{ resumed: boolean }> {
    if (!this.#gate.resume()) return { resumed: false };
    this.feed.frame({ type: "pause", state: "resumed", mode, at: this.#context.now().toISOString() });
    if (mode === "abandon") await this.#abandonQueued();
    if (mode === "steer" && steer !== undefined) await this.inject(steerMessage(steer), true);
    this.schedule();
    return { resumed: true };
  }

  async #abandonQueued(): Promise<void> {
    const dropped = this.#pending.splice(0);
    if (dropped.length === 0) return;
    const ids = dropped.map((item) => item.promptId);
    const row: SessionEvent = { ...this.#header("attach-resume", "attach/resume"), kind: "audit", name: "attach-resume-abandon", metadata: { source: "operator", abandoned_prompt_ids: ids } };
    try {
      await this.#append([row], ids);
    } catch (error) {
      this.#pending.unshift(...dropped);
      throw error;
    }
  }

  usageInfo(): UsageInfo {
    return this.#ledger.toUsageInfo();
  }

  usageFrame(): LiveFrame {
    return { type: "usage-update", ...this.#ledger.toUsageUpdate() };
  }

  #touch(): void {
    this.#lastActivity = Date.now();
  }

  /** Persist last_touched_at (the session list's activity column); failures are logged only. */
  #persistTouch(): void {
    const at = this.#context.now().toISOString();
    this.#record = { ...this.#record, lastTouchedAt: at };
    this.#context.store.touchSession(this.key, at).catch((error: unknown) => {
      this.#context.logError(`session ${this.key.id}: last_touched_at not persisted: ${String(error)}`);
    });
  }

  #header(invocationId: string, author: string) {
    return { id: uuidv7(), ts: this.#context.now().toISOString(), invocationId, author };
  }

  /** Append rows; publish them (after `before`) in commit order on the feed. */
  #append(events: SessionEvent[], drained: readonly string[] = [], before: LiveFrame[] = []): Promise<void> {
    const committed = this.#context.store.append(this.key, events, { drainedPromptIds: drained });
    this.feed.enqueue(committed.then((rows) => [...before.map(framePublication), ...rows.map(rowPublication)]));
    return committed.then(() => undefined);
  }

  async #runTurn(): Promise<void> {
    const items = this.#pending.splice(0);
    const bare = this.#bareWake;
    this.#bareWake = false;
    if (items.length === 0 && !bare) return;
    const invocationId = `e-${uuidv7()}`;
    const turn: ActiveTurn = {
      invocationId,
      promptId: items[0]?.promptId ?? uuidv7(),
      startedAt: performance.now(),
      running: undefined,
      usage: new TurnUsageAccumulator(),
      canceled: false,
    };
    this.#turn = turn;
    try {
      const started = await this.#startTurn(turn, items);
      if (!started) return;
      const outcome = await this.#execute(turn);
      await this.tools.endTurn(turn.invocationId).catch((error: unknown) => this.#context.logError(`session ${this.key.id}: closing prompts: ${String(error)}`));
      this.#finishTurn(turn, outcome);
    } finally {
      this.#turn = undefined;
      this.#touch();
      this.#persistTouch();
      this.schedule();
    }
  }

  /** Drain the inbox into the turn's user row (one transaction), then announce the turn. */
  async #startTurn(turn: ActiveTurn, items: InboxItem[]): Promise<boolean> {
    const text = items.length > 0 ? bundleInbox(items.map((item) => item.message)) : "";
    const userEvent: SessionEvent = { ...this.#header(turn.invocationId, "user"), kind: "user-message", text, promptIds: items.map((item) => item.promptId) };
    const dequeued: LiveFrame[] = items.map((item) => ({ type: "inbox", state: "dequeued", prompt_id: item.promptId, queued_at: ZERO_TIME }));
    const streaming: LiveFrame = { type: "status-update", turn_state: "streaming", model: this.#context.model.name };
    try {
      await this.#append([userEvent], items.map((item) => item.promptId), [...dequeued, streaming]);
    } catch (error) {
      this.#pending.unshift(...items);
      this.#context.logError(`session ${this.key.id}: could not start a turn: ${String(error)}`);
      return false;
    }
    const message = eventToMessage(userEvent);
    if (message) this.#history.push(message);
    if (this.#record.title === undefined && text !== "") void this.#nameSession(text);
    return true;
  }

  async #execute(turn: ActiveTurn): Promise<TurnOutcome> {
    if (turn.canceled || this.#context.isShuttingDown()) return { status: "canceled" };
    turn.running = this.#context.pool.runTurn(
      { turnId: turn.invocationId, model: this.#context.model, conversationKey: this.#conversationKey, conversation: this.#history, maxSteps: this.#context.maxSteps },
      {
        onTextDelta: (text) => this.feed.frame({ type: "text-delta", invocation_id: turn.invocationId, text }),
        onRequest: (request) => this.#answerWorker(turn, request),
      },
    );
    if (turn.canceled) turn.running.cancel();
    return turn.running.outcome;
  }

  #answerWorker(turn: ActiveTurn, request: WorkerRequest): Promise<unknown> {
    switch (request.kind) {
      case "commit-response":
        return this.#commitResponse(turn, request.draft);
      case "run-tool":
        return this.#runTool(turn, request.call);
      case "script-cursor":
        return Promise.resolve({ index: this.#context.nextScriptIndex() });
    }
  }

  async #commitResponse(turn: ActiveTurn, draft: ResponseDraft): Promise<{ ok: true }> {
    const model = this.#context.model.name;
    const event: ModelResponseEvent = {
      ...this.#header(turn.invocationId, this.#context.agentName),
      kind: "model-response",
      model,
      text: draft.text,
      toolCalls: draft.toolCalls,
      turnComplete: draft.turnComplete,
      finishReason: draft.finishReason,
      usage: draft.usage,
      cost: priceUsage(draft.usage, this.#context.pricing.rates(model)),
    };
    await this.#append([event]);
    turn.usage.add(event);
    this.#history.push({ role: "assistant", text: event.text, toolCalls: event.toolCalls });
    return { ok: true };
  }

  /**
   * A proposed tool call: through the permission gate, its result committed. A refusal that
   * completes a refusal storm cuts the turn (`canceled`) and records the suppressed count.
   */
  async #runTool(turn: ActiveTurn, call: ToolCall): Promise<ToolRunResult> {
    const verdict = await this.tools.run(call, turn.invocationId);
    const result = verdict.result;
    const event: ToolResultEvent = {
      ...this.#header(turn.invocationId, this.#context.agentName),
      kind: "tool-result",
      callId: call.callId,
      name: call.name,
      output: result.output,
      isError: result.isError,
      latencyMs: 0,
    };
    await this.#append([event]);
    this.#history.push({ role: "tool", callId: call.callId, name: call.name, output: result.output, isError: result.isError });
    if (verdict.storm !== undefined) {
      await this.#append([{ ...this.#header(turn.invocationId, "gate/refusal-storm"), kind: "audit", name: "refusal-storm", metadata: { suppressed_calls: verdict.storm } }]);
      this.#cancel(turn);
    }
    return result;
  }

  /** Terminal frame, then idle, then cumulative usage: in that order, after the turn's rows. */
  #finishTurn(turn: ActiveTurn, outcome: TurnOutcome): void {
    turn.usage.recordInto(this.#ledger);
    // Interrupted turns neither count as failures nor clear them.
    if (outcome.status === "completed") this.#failedInARow = 0;
    else if (outcome.status === "failed" && !turn.canceled) this.#failedInARow++;
    this.#context.turnEnded(turn.canceled ? "canceled" : outcome.status);
    const frames: LiveFrame[] = [];
    if (outcome.status === "completed") {
      frames.push({
        type: "turn-complete",
        prompt_id: turn.promptId,
        model: this.#context.model.name,
        tokens_in: turn.usage.usage.inputTokens,
        tokens_out: turn.usage.usage.outputTokens,
        cost_usd: turn.usage.cost.costUsd,
        latency_ms: Math.round(performance.now() - turn.startedAt),
      });
    } else {
      const payload = outcome.status === "canceled" || turn.canceled ? CANCELED_TURN : classifyTurnFailure(outcome.message, outcome.code);
      frames.push({ type: "turn-error", ...payload });
    }
    frames.push({ type: "status-update", turn_state: "idle" });
    frames.push(this.usageFrame());
    this.feed.enqueue(frames.map(framePublication));
  }

  async #nameSession(prompt: string): Promise<void> {
    const title = titleFromPrompt(prompt);
    if (!title) return;
    this.#record = { ...this.#record, title };
    try {
      await this.#context.store.setTitle(this.key, title);
    } catch (error) {
      this.#context.logError(`session ${this.key.id}: title not persisted: ${String(error)}`);
    }
  }
}
