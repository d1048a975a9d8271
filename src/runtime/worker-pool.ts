/**
 * WorkerPool: runs turns on a pool of turn workers (default one per core), one RPC connection
 * each (rpc/, the turn channel of channel.ts). Routes the worker's notifications and
 * requests to the turn that owns them, answers them through the turn's handlers, and replaces a
 * worker that crashes or exits, ignores a cancel past the grace period, or stops answering pings
 * while it runs turns (spinning: its turns end failed; the daemon lives on).
 */
import type { MessagePart } from "../core/events.ts";
import type { TraceCarrier } from "../core/session-store.ts";
import type { ChatMessage, ToolSpec } from "../core/model.ts";
import type { ToolRunResult } from "../core/tool-catalog.ts";
import {
  type RunTurnMessage,
  TURN_CHANNEL,
  type TurnMainSide,
  type TurnOutcome,
  type TurnWorkerSide,
  type WorkerRequest,
} from "./channel.ts";
import { LivenessWatch } from "../rpc/liveness-watch.ts";
import type { PendingRequest } from "../rpc/pending-request.ts";
import { RpcConnection } from "../rpc/rpc-connection.ts";
import { type RpcError, RpcVersionError } from "../rpc/rpc-error.ts";
import { workerTransport } from "../rpc/worker-port-transport.ts";
import { workerUrl } from "../rpc/worker-urls.ts";

export interface TurnHandlers {
  /** A streamed part of the turn's response `messageId` (D296). */
  onPart(messageId: string, part: MessagePart): void;
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
  /** Offer these tools and this system prompt instead of the pool's (a workload's agent). */
  offer?: TurnOffer;
  /** The turn span's trace context (tracing on). */
  trace?: TraceCarrier;
}

/** The tools and system prompt a turn offers the model. */
export interface TurnOffer {
  tools: ToolSpec[];
  system?: string;
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
  /** The `run-turn` request; its answer is the outcome. */
  request: PendingRequest<TurnOutcome>;
  cancelTimer?: ReturnType<typeof setTimeout>;
}

type TurnConnection = RpcConnection<TurnMainSide, TurnWorkerSide>;

interface Slot {
  connection: TurnConnection;
  turns: Map<string, ActiveTurn>;
  /** Conversations the worker holds (key -> message count), least recently used first. */
  conversations: Map<string, number>;
  /** Sum of the message counts in `conversations`. */
  messages: number;
}

/** Respawn delay after a worker failed to start: 200 ms doubling to 30 s. */
function startBackoffMs(failures: number): number {
  return Math.min(30_000, 200 * 2 ** Math.max(0, failures - 1));
}

/** The request handed to a turn's handlers for `script-cursor` (it carries nothing, so one serves all). */
const SCRIPT_CURSOR: WorkerRequest = { kind: "script-cursor" };

export type WorkerFactory = () => Worker;

/**
 * The turn worker from `workers/turn.ts`. Its URL comes from worker-urls.ts because inside the
 * compiled binary `import.meta.url` is the binary entry's, not this file's, so a path relative to
 * src/runtime/ does not resolve there (see src/rpc/worker-urls.ts for what was measured).
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
  /**
   * A worker with turns in flight must answer each ping within the liveness window: one that
   * does not is spinning (a synchronous loop holds its thread, so neither cancels nor stream
   * chunks get through) and is replaced; its turns end failed. Idle workers are not pinged.
   */
  readonly #liveness: LivenessWatch;

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
    this.#liveness = new LivenessWatch(options.livenessMs ?? 30_000);
    for (let i = 0; i < Math.max(1, size); i++) this.#slots.push(this.#spawn());
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

  /** The turns each worker is running now, by worker index (what svc's teardown watchdog reports). */
  openTurns(): Array<{ worker: number; turns: string[] }> {
    return this.#slots.map((slot, worker) => ({ worker, turns: [...slot.turns.keys()] }));
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
    const request = slot.connection.call("run-turn", this.#runParams(slot, turn));
    const active: ActiveTurn = { handlers, finish, request };
    slot.turns.set(turn.turnId, active);
    request.result.then(
      (answer) => this.#answered(slot, turn.turnId, active, answer),
      (error: RpcError) => this.#answered(slot, turn.turnId, active, { status: "failed", message: error.message }),
    );
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
      slot.connection.notify("forget", { keys: [conversationKey] });
    }
  }

  #runParams(slot: Slot, turn: TurnRequest): RunTurnMessage {
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
      turnId: turn.turnId,
      model: turn.model,
      historyKey: turn.conversationKey,
      historyBase: usable,
      history: turn.conversation.slice(usable),
      forget,
      maxSteps: turn.maxSteps,
      ...this.#offerFields(turn),
      ...(turn.trace === undefined ? {} : { trace: turn.trace }),
    };
  }

  #drop(slot: Slot, key: string): void {
    slot.messages -= slot.conversations.get(key) ?? 0;
    slot.conversations.delete(key);
  }

  #offerFields(turn: TurnRequest): { tools?: ToolSpec[]; system?: string } {
    if (turn.bare) return {};
    if (turn.offer) return turn.offer;
    return { tools: this.#tools(), ...this.#systemField() };
  }

  #systemField(): { system?: string } {
    const system = this.#system();
    return system === undefined ? {} : { system };
  }

  /** Terminate every worker; turns still running end canceled. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#liveness.stop();
    for (const timer of this.#respawnTimers) clearTimeout(timer);
    this.#respawnTimers.clear();
    for (const slot of this.#slots) {
      for (const [turnId, turn] of slot.turns) this.#end(slot, turnId, turn, { status: "canceled" });
      slot.connection.close("the worker pool closed");
    }
    this.#slots.length = 0;
  }

  #spawn(): Slot {
    const turns = new Map<string, ActiveTurn>();
    const connection: TurnConnection = RpcConnection.open(TURN_CHANNEL, workerTransport(this.#factory()), undefined, {
      onReady: () => {
        this.#startFailures = 0;
      },
      onFault: (error) => this.#replace(slot, this.#faultReason(error)),
    });
    const slot: Slot = { connection, turns, conversations: new Map(), messages: 0 };
    connection
      .onNotification("message-part", (params) =>
        turns.get(params.turnId)?.handlers.onPart(params.messageId, params.part),
      )
      .handle("commit-response", (params) =>
        this.#turnRequest(turns, params.turnId, { kind: "commit-response", draft: params.draft }),
      )
      .handle("run-tool", (params) =>
        this.#turnRequest<ToolRunResult>(turns, params.turnId, { kind: "run-tool", call: params.call }),
      )
      .handle("script-cursor", (params) => this.#turnRequest<{ index: number }>(turns, params.turnId, SCRIPT_CURSOR));
    this.#liveness.watch(connection, {
      busy: () => turns.size > 0,
      onUnresponsive: (silentMs) =>
        this.#replace(
          slot,
          `turn worker unresponsive for ${Math.round(silentMs / 1000)} s (a turn spinning on its thread)`,
        ),
    });
    return slot;
  }

  #faultReason(error: RpcError): string {
    if (error instanceof RpcVersionError)
      return `turn worker speaks channel v${error.peerVersion}, the daemon v${error.localVersion}`;
    if (error.code === "crashed") return `turn worker crashed: ${error.message}`;
    return "turn worker exited";
  }

  /**
   * A turn's request to the main thread, answered by its handlers (TurnHandlers.onRequest answers
   * each kind with the result its channel method names); a turn that is over is refused.
   */
  #turnRequest<Result = unknown>(
    turns: Map<string, ActiveTurn>,
    turnId: string,
    request: WorkerRequest,
  ): Promise<Result> {
    const turn = turns.get(turnId);
    if (!turn) return Promise.reject(new Error("turn is over"));
    return turn.handlers.onRequest(request) as Promise<Result>;
  }

  #leastBusy(): Slot | undefined {
    let best = this.#slots[0];
    for (const slot of this.#slots) if (best === undefined || slot.turns.size < best.turns.size) best = slot;
    return best;
  }

  /** The worker answered `run-turn` (or the request failed): the turn ends, unless it already did. */
  #answered(slot: Slot, turnId: string, active: ActiveTurn, outcome: TurnOutcome): void {
    if (slot.turns.get(turnId) === active) this.#end(slot, turnId, active, outcome);
  }

  #cancel(slot: Slot, turnId: string): void {
    const turn = slot.turns.get(turnId);
    if (!turn || turn.cancelTimer) return;
    turn.request.cancel();
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
    slot.connection.close(reason);
    if (index < 0 || this.#closed) return;
    const ready = slot.connection.ready;
    this.#onFailure(
      ready
        ? `${reason}; replacing the worker`
        : `${reason}; the worker never started, retrying in ${startBackoffMs(this.#startFailures + 1)} ms`,
    );
    if (ready) {
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
