/**
 * Auto-continue rules (docs/agent.md#auto-continue): which interrupted turns get a synthesized
 * continue turn, and the guards every re-drive passes. Reading a session's rows: the turn a
 * restart cut (no final answer and no row saying it ended deliberately or failed), and how many
 * re-drives the current interruption sequence already had (a human message resets it). Pure.
 */
import { endsLoopTurn } from "./wake-loop.ts";
import type { CommittedRow } from "./events.ts";

export type ContinueCause = "restart" | "transient" | "output-cap";

export const AUTO_CONTINUE_AUTHOR = "agent/auto-continue";
/** Re-drives per interruption sequence; a human message starts a new sequence. */
export const MAX_PER_SEQUENCE = 3;
/** How long a daemon's claim on an interruption keeps other daemons off it. */
export const CLAIM_TTL_MS = 10 * 60_000;

/** Rows that end a turn on purpose or with a classified failure: never re-driven at boot. */
const TURN_ENDING_AUTHORS = new Set([
  "attach/interrupt",
  "gate/refusal-storm",
  "agent/guardrail-trip",
  "agent/turn-error",
  "attach/resume",
]);

/** Finish reasons meaning the output-token cap cut the answer (AI SDK and provider spellings). */
const OUTPUT_CAP_REASONS = new Set(["length", "max_tokens", "max_output_tokens"]);

export function isOutputCap(finishReason: string | undefined): boolean {
  return finishReason !== undefined && OUTPUT_CAP_REASONS.has(finishReason.toLowerCase());
}

export function continueNote(cause: ContinueCause): string {
  const why =
    cause === "restart"
      ? "the daemon restarted while your previous turn was running"
      : cause === "transient"
        ? "your previous turn failed on a transient model-provider error"
        : "your previous answer was cut off at the output-token limit";
  return `[auto-continue] ${why}. Continue from where you stopped; do not repeat steps that already completed.`;
}

export interface CutTurn {
  /** Invocation id of the cut turn (the interruption's identity). */
  interruption: string;
  /** Time of the last row the turn committed. */
  at: string;
}

/**
 * The last turn, if a restart cut it: it has a prompt row, no final model response (one with no
 * tool calls), and no row after its prompt that ended it deliberately or recorded a failure.
 */
export function findCutTurn(rows: readonly CommittedRow[]): CutTurn | undefined {
  let start = -1;
  for (let index = rows.length - 1; index >= 0; index--) {
    if (rows[index]?.event.kind === "user-message") {
      start = index;
      break;
    }
  }
  if (start < 0) return undefined;
  const prompt = rows[start]?.event;
  if (!prompt) return undefined;
  let at = prompt.ts;
  for (const { event } of rows.slice(start + 1)) {
    if (event.kind === "model-response" && event.invocationId === prompt.invocationId && event.toolCalls.length === 0)
      return undefined;
    if (event.kind === "audit" && TURN_ENDING_AUTHORS.has(event.author)) return undefined;
    // A loop-control call that ended the turn (a schedule, a result, D360) cut nothing.
    if (endsLoopTurn(event)) return undefined;
    if (event.invocationId === prompt.invocationId) at = event.ts;
  }
  return { interruption: prompt.invocationId, at };
}

/** Re-drives since the last human prompt: the trailing run of auto-continue prompts. */
export function sequenceCount(rows: readonly CommittedRow[]): number {
  let count = 0;
  for (let index = rows.length - 1; index >= 0; index--) {
    const event = rows[index]?.event;
    if (event?.kind !== "user-message") continue;
    if (event.author !== AUTO_CONTINUE_AUTHOR) break;
    count++;
  }
  return count;
}

export interface ContinueGuardInput {
  cause: ContinueCause;
  /** Milliseconds since the interruption. */
  ageMs: number;
  /** Re-drives already made in this interruption sequence. */
  sequence: number;
  /** Re-drives this run made, all sessions / this session. */
  bootCount: number;
  sessionCount: number;
  halted: boolean;
  turnInFlight: boolean;
  breakerOpen: boolean;
}

export interface ContinueLimits {
  freshnessMs: number;
  maxPerBoot: number;
  maxPerSession: number;
}

/** Why a re-drive is refused, or undefined when every guard passes (the claim comes after). */
export function continueRefusal(input: ContinueGuardInput, limits: ContinueLimits): string | undefined {
  if (input.halted) return "a guardrail holds the session halted";
  if (input.turnInFlight) return "a turn is in flight";
  if (input.cause === "restart" && input.breakerOpen)
    return "the crash-loop breaker is open (the daemon stopped uncleanly too often recently)";
  if (input.ageMs > limits.freshnessMs)
    return `the interruption is older than the freshness window (${Math.round(limits.freshnessMs / 1000)}s)`;
  if (input.sequence >= MAX_PER_SEQUENCE)
    return `${MAX_PER_SEQUENCE} re-drives already in this interruption sequence (a human message resets it)`;
  if (input.sessionCount >= limits.maxPerSession)
    return `the per-session cap of ${limits.maxPerSession} re-drives per run is reached`;
  if (input.bootCount >= limits.maxPerBoot) return `the per-run cap of ${limits.maxPerBoot} re-drives is reached`;
  return undefined;
}
