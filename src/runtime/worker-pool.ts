/**
 * WorkerPool: runs turns on a pool of turn workers (default one per core). Routes channel
 * messages to the turn that owns them, answers worker requests through the turn's handlers,
 * and replaces a worker that crashes, ignores a cancel past the grace period, or stops answering
 * pings while it runs turns (spinning: its turns end failed; the daemon lives on).
 */
import type { ChatMessage, ToolSpec } from "../core/model.ts";
import {
  CHANNEL_VERSION,
  type FromWorker,
  type RunTurnMessage,
  type ToWorker,
  type TurnOutcome,
  type WorkerRequest,
  isFromWorker,
} from "./channel.ts";
import { workerUrl } from "./worker-urls.ts";

export interface TurnHandlers {
  onTextDelta(text: string): void;
  onRequest(request: WorkerRequest): Promise<unknown>;
}

export interface TurnRequest {
  turnId: string;
  model: RunTurnMessage["model"];
  /** Names the conversation; a new key (e.g. after a rebuild) starts a fresh cache entry. */
  conversationKey: string;
  /** The session's whole conversation, the turn's user message last; only read here. */
  conversation: readonly ChatMessage[];
  maxSteps: number;
  /** Offer no tools and no system prompt (a compaction summary call). */
  bare?: boolean;
}

/**
 * What a worker keeps between turns: at most this many conversations and this many messages in
 * all; the least recently used beyond either are forgotten (their next turn sends them whole).
 */
export const CONVERSATIONS_PER_WORKER = 256;
export const MESSAGES_PER_WORKER = 200_000;

export interface ConversationBudget {
  conversations: number;
  messages: number;
}

export interface RunningTurn {
  readonly outcome: Promise<TurnOutcome>;
  cancel(): void;
}

interface ActiveTurn {
  handlers: TurnHandlers;
  finish: (outcome: TurnOutcome) => void;
  cancelTimer?: ReturnType<typeof setTimeout>;
}

interface Slot {
  worker: Worker;
  turns: Map<string, ActiveTurn>;
  /** Conversations the worker holds (key -> message count), least recently used first. */
  conversations: Map<string, number>;
  /** Sum of the message counts in `conversations`. */
  messages: number;
  /** Set when the worker answered `hello`; a worker that dies before that failed to start. */
  ready: boolean;
  /** The ping awaiting its pong, and when it was sent (performance.now()). */
  ping: { id: number; sentAt: number } | undefined;
}

/** How often a worker running turns is pinged, at most (the liveness window divides it further). */
const PING_EVERY_MS = 1000;

/** Respawn delay after a worker failed to start: 200 ms doubling to 30 s. */
function startBackoffMs(failures: number): number {
  return Math.min(30_000, 200 * 2 ** Math.max(0, failures - 1));
}

export type WorkerFactory = () => Worker;

/**
 * The turn worker from `workers/turn.ts`. Its URL comes from worker-urls.ts because inside the
 * compiled binary `import.meta.url` is the binary entry's, not this file's, so a path relative to
 * src/runtime/ does not resolve there (see worker-urls.ts for what was measured).
 */
export const defaultWorkerFactory: WorkerFactory = () => new Worker(workerUrl("turn"));

export class WorkerPool {
  readonly #slots: Slot[] = [];
  readonly #factory: WorkerFactory;
  readonly #cancelGraceMs: number;
  readonly #respawnTimers = new Set<ReturnType<typeof setTimeout>>();
  #startFailures = 0;
  #lastStartFailure = "";
  #closed = false;
  readonly #livenessMs: number;
  #liveness: ReturnType<typeof setInterval> | undefined;
  #pingId = 0;

  readonly #onFailure: (reason: string) => void;
  /** The tool specs every turn offers the model (the tool catalog's). */
  readonly #tools: () => ToolSpec[];
  /** The system prompt every turn carries (memory, skills index). */
  readonly #system: () => string | undefined;

  /** What each worker may keep between turns (CONVERSATIONS_PER_WORKER, MESSAGES_PER_WORKER). */
  readonly #budget: ConversationBudget;

  constructor(
    size: number,
    options: {
      factory?: WorkerFactory;
      cancelGraceMs?: number;
      /** A worker running turns that leaves a ping unanswered this long is replaced (default 30 s). */
      livenessMs?: number;
      onFailure?: (reason: string) => void;
      tools?: () => ToolSpec[];
      system?: () => string | undefined;
      conversationBudget?: ConversationBudget;
    } = {},
  ) {
    this.#budget = options.conversationBudget ?? {
      conversations: CONVERSATIONS_PER_WORKER,
      messages: MESSAGES_PER_WORKER,
    };
    this.#factory = options.factory ?? defaultWorkerFactory;
    this.#tools = options.tools ?? (() => []);
    this.#system = options.system ?? (() => undefined);
    this.#onFailure = options.onFailure ?? (() => {});
    this.#cancelGraceMs = options.cancelGraceMs ?? 5000;
    this.#livenessMs = options.livenessMs ?? 30_000;
    for (let i = 0; i < Math.max(1, size); i++) this.#slots.push(this.#spawn());
    this.#liveness = setInterval(
      () => this.#checkLiveness(),
      Math.min(PING_EVERY_MS, Math.max(10, this.#livenessMs / 4)),
    );
    this.#liveness.unref?.();
  }

  /**
   * A worker with turns in flight must answer each ping within the liveness window: one that
   * does not is spinning (a synchronous loop holds its thread, so neither cancels nor stream
   * chunks get through) and is replaced; its turns end failed. Idle workers are not pinged.
   */
  #checkLiveness(): void {
    const now = performance.now();
    for (const slot of [...this.#slots]) {
      if (!slot.ready) continue;
      if (slot.ping) {
        if (now - slot.ping.sentAt > this.#livenessMs) {
          this.#replace(
            slot,
            `turn worker unresponsive for ${Math.round((now - slot.ping.sentAt) / 1000)} s (a turn spinning on its thread)`,
          );
        }
        continue;
      }
      if (slot.turns.size === 0) continue;
      slot.ping = { id: ++this.#pingId, sentAt: now };
      this.#send(slot, { type: "ping", id: slot.ping.id });
    }
  }

  get size(): number {
    return this.#slots.length;
  }

  /** Conversation messages the turn workers hold between turns, all workers together. */
  get cachedMessages(): number {
    let total = 0;
    for (const slot of this.#slots) total += slot.messages;
    return total;
  }

  /** False while no worker can be started (every recent start failed): readiness reports it. */
  get healthy(): boolean {
    return this.#slots.length > 0 && this.#startFailures < 3;
  }

  /**
   * Run a turn. `conversation` is the session's whole history (never copied here): a worker that
   * ran this conversation before gets only the messages added since (session affinity).
   */
  runTurn(turn: TurnRequest, handlers: TurnHandlers): RunningTurn {
    if (this.#closed) return { outcome: Promise.resolve({ status: "canceled" }), cancel: () => {} };
    const slot =
      this.#slots.find((candidate) => candidate.conversations.has(turn.conversationKey)) ?? this.#leastBusy();
    if (!slot) {
      const reason = `no turn worker could be started${this.#lastStartFailure ? `: ${this.#lastStartFailure}` : ""}`;
      return { outcome: Promise.resolve({ status: "failed", message: reason }), cancel: () => {} };
    }
    let finish!: (outcome: TurnOutcome) => void;
    const outcome = new Promise<TurnOutcome>((resolve) => (finish = resolve));
    const active: ActiveTurn = { handlers, finish };
    slot.turns.set(turn.turnId, active);
    this.#send(slot, this.#runMessage(slot, turn));
    return {
      outcome,
      cancel: () => this.#cancel(slot, turn.turnId),
    };
  }

  /**
   * The session behind `conversationKey` left memory (evicted or deleted): every worker drops its
   * copy of the conversation now rather than when it falls out of the cache.
   */
  forget(conversationKey: string): void {
    for (const slot of this.#slots) {
      if (!slot.conversations.has(conversationKey)) continue;
      this.#drop(slot, conversationKey);
      this.#send(slot, { type: "forget", keys: [conversationKey] });
    }
  }

  #runMessage(slot: Slot, turn: TurnRequest): RunTurnMessage {
    const base = slot.conversations.get(turn.conversationKey) ?? 0;
    const usable = base <= turn.conversation.length ? base : 0;
    this.#drop(slot, turn.conversationKey);
    slot.conversations.set(turn.conversationKey, turn.conversation.length);
    slot.messages += turn.conversation.length;
    const forget: string[] = [];
    for (const key of slot.conversations.keys()) {
      if (key === turn.conversationKey) break;
      if (slot.conversations.size <= this.#budget.conversations && slot.messages <= this.#budget.messages) break;
      forget.push(key);
      this.#drop(slot, key);
    }
    return {
      type: "run-turn",
      turnId: turn.turnId,
      model: turn.model,
      historyKey: turn.conversationKey,
      historyBase: usable,
      history: turn.conversation.slice(usable),
      forget,
      maxSteps: turn.maxSteps,
      ...(turn.bare ? {} : { tools: this.#tools(), ...this.#systemField() }),
    };
  }

  #drop(slot: Slot, key: string): void {
    slot.messages -= slot.conversations.get(key) ?? 0;
    slot.conversations.delete(key);
  }

  #systemField(): { system?: string } {
    const system = this.#system();
    return system === undefined ? {} : { system };
  }

  /** Terminate every worker; turns still running end canceled. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#liveness) clearInterval(this.#liveness);
    for (const timer of this.#respawnTimers) clearTimeout(timer);
    this.#respawnTimers.clear();
    for (const slot of this.#slots) {
      for (const [turnId, turn] of slot.turns) this.#end(slot, turnId, turn, { status: "canceled" });
      slot.worker.terminate();
    }
    this.#slots.length = 0;
  }

  #spawn(): Slot {
    const slot: Slot = {
      worker: this.#factory(),
      turns: new Map(),
      conversations: new Map(),
      messages: 0,
      ready: false,
      ping: undefined,
    };
    slot.worker.onmessage = (event: MessageEvent) => this.#onMessage(slot, event.data);
    slot.worker.onerror = (event: ErrorEvent) => this.#replace(slot, `turn worker crashed: ${event.message}`);
    this.#send(slot, { type: "hello", version: CHANNEL_VERSION });
    return slot;
  }

  #leastBusy(): Slot | undefined {
    let best = this.#slots[0];
    for (const slot of this.#slots) if (best === undefined || slot.turns.size < best.turns.size) best = slot;
    return best;
  }

  #send(slot: Slot, message: ToWorker): void {
    slot.worker.postMessage(message);
  }

  #onMessage(slot: Slot, message: unknown): void {
    if (!isFromWorker(message)) return;
    const data: FromWorker = message;
    switch (data.type) {
      case "ready":
        if (data.version !== CHANNEL_VERSION) {
          this.#replace(slot, `turn worker speaks channel v${data.version}, the daemon v${CHANNEL_VERSION}`);
          return;
        }
        slot.ready = true;
        this.#startFailures = 0;
        return;
      case "text-delta":
        slot.turns.get(data.turnId)?.handlers.onTextDelta(data.text);
        return;
      case "request":
        this.#answer(slot, data.turnId, data.requestId, data.request);
        return;
      case "turn-end": {
        const turn = slot.turns.get(data.turnId);
        if (turn) this.#end(slot, data.turnId, turn, data.outcome);
        return;
      }
      case "pong":
        if (slot.ping?.id === data.id) slot.ping = undefined;
        return;
    }
  }

  #answer(slot: Slot, turnId: string, requestId: number, request: WorkerRequest): void {
    const turn = slot.turns.get(turnId);
    if (!turn) {
      this.#send(slot, { type: "reply", requestId, result: { ok: false, error: "turn is over" } });
      return;
    }
    turn.handlers.onRequest(request).then(
      (value) => this.#send(slot, { type: "reply", requestId, result: { ok: true, value } }),
      (error: unknown) =>
        this.#send(slot, {
          type: "reply",
          requestId,
          result: { ok: false, error: error instanceof Error ? error.message : String(error) },
        }),
    );
  }

  #cancel(slot: Slot, turnId: string): void {
    const turn = slot.turns.get(turnId);
    if (!turn || turn.cancelTimer) return;
    this.#send(slot, { type: "cancel", turnId });
    turn.cancelTimer = setTimeout(() => {
      if (slot.turns.has(turnId)) this.#replace(slot, "turn worker ignored a cancel past its grace period");
    }, this.#cancelGraceMs);
  }

  #end(slot: Slot, turnId: string, turn: ActiveTurn, outcome: TurnOutcome): void {
    if (turn.cancelTimer) clearTimeout(turn.cancelTimer);
    slot.turns.delete(turnId);
    turn.finish(outcome);
  }

  /**
   * Fail the slot's turns, terminate its worker, and put a fresh one in its place: at once after a
   * crash, with a growing delay when the worker never started (so a broken build cannot spin).
   */
  #replace(slot: Slot, reason: string): void {
    const index = this.#slots.indexOf(slot);
    for (const [turnId, turn] of slot.turns) {
      const canceled = turn.cancelTimer !== undefined;
      this.#end(slot, turnId, turn, canceled ? { status: "canceled" } : { status: "failed", message: reason });
    }
    slot.worker.terminate();
    if (index < 0 || this.#closed) return;
    this.#onFailure(
      slot.ready
        ? `${reason}; replacing the worker`
        : `${reason}; the worker never started, retrying in ${startBackoffMs(this.#startFailures + 1)} ms`,
    );
    if (slot.ready) {
      this.#slots[index] = this.#spawn();
      return;
    }
    this.#slots.splice(index, 1);
    this.#startFailures++;
    this.#lastStartFailure = reason;
    const timer = setTimeout(() => {
      this.#respawnTimers.delete(timer);
      if (!this.#closed) this.#slots.push(this.#spawn());
    }, startBackoffMs(this.#startFailures));
    this.#respawnTimers.add(timer);
  }
}
