/**
 * Executor: what runs one unit of a session's work once its scheduler (SessionActor) has decided
 * the work is due. The scheduler owns the inbox, the pause gate, auto-continue and the one-at-a-
 * time rule; an executor owns what the work does. Executor and event bus apart (as a2a-js's
 * AgentExecutor and ExecutionEventBus): an executor records and publishes only through the
 * session's Journal; the scheduler only starts it, cancels it and reads how it ended. The agent's
 * model turn (TurnExecutor) is the first implementation; a workflow workload is the next.
 * Types only.
 */
import type { TurnErrorPayload } from "../core/events.ts";
import type { SessionKey } from "../core/session-key.ts";
import type { InboxItem } from "../core/session-store.ts";
import type { ActorContext } from "./actor-types.ts";
import type { ArmedContinue } from "./continue-slot.ts";
import type { GatedTools } from "./gated-tools.ts";
import type { SessionConversation } from "./session-conversation.ts";
import type { Journal } from "./session-journal.ts";
import type { SessionGuards } from "./session-guards.ts";
import type { SubagentPort } from "./subagent-port.ts";
import type { LoopPort } from "./loop-control-tools.ts";

/** Why an execution was cancelled, when it was. */
export type CancelCause = "operator" | "guardrail" | "refusal-storm" | "shutdown" | "deadline" | "context-window";

/** One execution the scheduler starts: what it drains and the hooks it reports its start on. */
export interface Execution {
  /** The execution's id: the invocation id of every row it writes. */
  readonly invocationId: string;
  /** The prompt id its end is reported under (the first drained message, or the continue turn's). */
  readonly promptId: string;
  /** Inbox items it drains (empty for a continue turn or a bare wake). */
  readonly items: readonly InboxItem[];
  /** The continue turn it runs, when no inbox item superseded it. */
  readonly armed: ArmedContinue | undefined;
  /** Its opening rows committed (the items are drained); `human` is the bundled human text ("" when none). */
  started(human: string): void;
  /** Its opening write was refused: nothing ran, and the items are the scheduler's again. */
  refused(error: unknown): void;
}

/** How an execution ended, for the scheduler's bookkeeping (readiness, auto-continue). */
export interface ExecutionEnd {
  status: "completed" | "failed" | "canceled";
  error?: TurnErrorPayload;
  cancelCause?: CancelCause;
  /** Finish reason of the execution's last model response, if it made one. */
  finishReason?: string;
}

/** What an idle session waits on that only an operator answers, as /status shows it (D342). */
export interface ExecutorPark {
  /** The status's `pause_reason`. */
  reason: string;
  /** RFC 3339: since when (the status's `paused_since`). */
  since: string;
}

export interface Executor {
  /**
   * Run one execution to its end: its opening rows, its work, and its end published in the
   * order of docs/attach-api.md#frame-order (rows, terminal frame, idle status, usage). Undefined when it never started
   * (`refused` was called). Never rejects for the work's own failure: that is an `ExecutionEnd`.
   */
  execute(execution: Execution): Promise<ExecutionEnd | undefined>;
  /**
   * Cancel the execution with this invocation id if it is this executor's latest: stop its work,
   * close what waits on it. The first cause wins; its end still comes through `execute`.
   */
  cancel(invocationId: string, cause: CancelCause): void;
  /**
   * A hold the session's work is under (svc's gate pause): while it answers a refusal, no
   * execution starts and every inject or wake is refused with it. Optional; none by default.
   */
  hold?(): Error | undefined;
  /**
   * What the session waits on from an operator while no turn runs (svc: a write-gate or result
   * question, a gate pause): `/status` then reads `paused` with its reason and time, as a parked
   * session (D342). Optional; none by default.
   */
  parked?(): Promise<ExecutorPark | undefined>;
  /**
   * The session's actor left memory (evicted while idle, or deleted): drop what the executor's
   * owner keeps for it. Optional; the next touch builds a new actor and executor (D319).
   */
  release?(): void;
}

/** What a session offers the executor it runs: its journal and the state a turn works on. */
export interface ExecutorSession {
  key: SessionKey;
  context: ActorContext;
  journal: Journal;
  /** The conversation (appended to in place), its worker-cache name and its usage ledger. */
  conversation: SessionConversation;
  tools: GatedTools;
  guards: SessionGuards;
  /** The session's subagent instances (a parent-tool call launches one). */
  subagents: SubagentPort;
  /** The session's wake loop (D360), when the daemon answers the loop-control tools. */
  loop?: LoopPort;
}

/** Builds a session's executor once, when the session is loaded. */
export type ExecutorFactory = (session: ExecutorSession) => Executor;
