/**
 * What a session actor needs from its host (ActorContext) and the shapes its operations answer.
 * Types only.
 */
import type { GuardrailConfig, GuardrailName } from "../core/guardrails.ts";
import type { InboxCaps } from "../core/inbox-room.ts";
import type { ModelSpec, ToolSpec } from "../core/model.ts";
import type { SubagentSpec } from "../core/subagents.ts";
import type { PlanFiles } from "../plans/plan-files.ts";
import type { Store } from "../core/session-store.ts";
import type { AutoContinuer } from "./auto-continuer.ts";
import type { TurnOutcome } from "./channel.ts";
import type { PermissionSettings } from "./gated-tools.ts";
import type { PricingTable } from "./pricing-table.ts";
import type { DigestSettings } from "../core/digest.ts";
import type { WorkerPool } from "./worker-pool.ts";
import type { WakeTimers } from "./wake-timers.ts";

export interface ActorContext {
  store: Store;
  /** Turn workers: a turn and a compaction's summary run there; a rewritten conversation is forgotten. */
  pool: Pick<WorkerPool, "runTurn" | "forget">;
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
  guardrails: GuardrailConfig;
  autoContinue: AutoContinuer;
  /** Told when a halted session refuses a turn (metrics). */
  turnRefused(guardrail: GuardrailName): void;
  /** Before a turn is dispatched: tool servers not started yet start and list their tools (lazy). */
  prepareTools(): Promise<void>;
  /** True the first time `what` is asked in this process (context-reduction notices announced once). */
  announceOnce(what: string): boolean;
  /** What a session's inbox may hold waiting for a turn; an inject past it is refused (429). */
  inboxCaps: InboxCaps;
  /** An execution still running this long after it started is cancelled (cause `deadline`); 0: none. */
  turnDeadlineMs: number;
  /** The configured subagents (D351); empty: none. */
  subagents: readonly SubagentSpec[];
  /** The tools the daemon offers a turn (a subagent's grant picks from them). */
  toolSpecs(): ToolSpec[];
  /** The sessions' plan files (`/slash/replan`, D358); absent: no plans directory (replan answers 501). */
  plans?: PlanFiles;
  /** How large tool results are reduced before the model reads them (D352); absent: unchanged, not counted. */
  digest?: DigestSettings;
  /**
   * The host's wake timers (D360): a schedule arms its session's one pending wake here, /status
   * reads it. Absent: the loop-control tools are not answered (svc, or `agent.wake_loop.enabled` false).
   */
  wakeLoop?: Pick<WakeTimers, "arm" | "pending">;
}

/** POST /slash/replan's answer. */
export interface ReplanResult {
  archivedPath?: string;
  planWasActive: boolean;
  message: string;
}

export interface InjectResult {
  promptId: string;
  woke: boolean;
  /** Set when a guardrail holds the session halted: the message waits in the inbox. */
  halted?: { guardrail: GuardrailName; reason: string };
  /** The idempotency key named a message injected before: nothing new was queued. */
  duplicate?: true;
}

export interface StatusInfo {
  state: "idle" | "running" | "paused";
  model_name: string;
  turn_in_flight: boolean;
  next_wake_at: string;
  paused_since: string;
  pause_reason?: string;
  current_tool?: string;
  /** Present while the session summarizes its history between turns (D166): the next turn waits. */
  compacting?: true;
}

export interface InterruptResult {
  interrupted: boolean;
  paused: boolean;
}

/** A subagent instance as /interrupt names it. */
export interface SubagentRef {
  name: string;
  id: string;
}
