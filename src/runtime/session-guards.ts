/**
 * SessionGuards: a live session's guardrails at work. Feeds the watchdog each proposed tool
 * call and the cost ceiling each priced response, records every trip durably (row
 * `agent/guardrail-trip`) before its `guardrail-trip` frame, queues watchdog feedback for the
 * next prompt, refuses turns while halted, and runs operator resets (row
 * `attach/guardrail-reset`, committed before the state changes). The actor decides what a trip
 * does to the running turn; this unit says whether it must be cut.
 */
import type { CommittedRow, ToolCall } from "../core/events.ts";
import {
  RESET_AUTHOR,
  RESET_INVOCATION,
  TRIP_AUTHOR,
  TRIP_INVOCATION,
  WATCHDOG_SIGNAL_AUTHOR,
  resetMetadata,
  restoreGuardrails,
  tripMetadata,
} from "../core/guardrail-rows.ts";
import type {
  GuardrailConfig,
  GuardrailInfo,
  GuardrailName,
  Guardrails,
  ResetRequest,
  Trip,
} from "../core/guardrails.ts";
import { SparError } from "../core/errors.ts";
import { LoopDetector, type WatchdogSignal, watchdogFeedbackBlock } from "../core/watchdog.ts";
import type { Journal } from "./session-journal.ts";

export interface GuardsDeps {
  /** Trips, resets and watchdog signals are recorded here; trip frames too. */
  journal: Journal;
  sessionCostUsd(): number;
  logWarning(message: string): void;
}

/** Per-turn guard state. */
export interface TurnGuardState {
  invocationId: string;
  detector: LoopDetector;
  /** This turn tripped its per-turn bound (one trip per turn). */
  costTripped: boolean;
}

export interface ResetOutcome {
  reset: GuardrailName[];
  budget_added_usd: number;
  guardrails: GuardrailInfo;
  message: string;
}

export class SessionGuards {
  readonly #guardrails: Guardrails;
  readonly #deps: GuardsDeps;
  /** Watchdog signals waiting for the next prompt (feedback and enforce modes). */
  #feedback: WatchdogSignal[];

  constructor(config: GuardrailConfig, rows: readonly CommittedRow[], sessionCostUsd: number, deps: GuardsDeps) {
    this.#guardrails = restoreGuardrails(rows, config, sessionCostUsd);
    this.#deps = deps;
    this.#feedback = config.watchdog === "feedback" || config.watchdog === "enforce" ? pendingFeedback(rows) : [];
  }

  get halted(): { guardrail: GuardrailName; reason: string } | undefined {
    return this.#guardrails.halted;
  }

  beginTurn(invocationId: string): TurnGuardState {
    return { invocationId, detector: new LoopDetector(), costTripped: false };
  }

  /**
   * Before a turn: the refusal when the session is halted (no frames, the inbox keeps its
   * messages). Spend found at the bound trips here, recorded with a frame (no turn was cut).
   */
  async preflight(): Promise<{ guardrail: GuardrailName; reason: string } | undefined> {
    const check = this.#guardrails.preflight(this.#deps.sessionCostUsd());
    if (!check) return undefined;
    if (check.trip) await this.#record(check.trip, undefined, false);
    return check.refuse;
  }

  /** The prompt with pending watchdog feedback prepended (consumed). */
  framePrompt(text: string): string {
    if (this.#feedback.length === 0) return text;
    const block = watchdogFeedbackBlock(this.#feedback);
    this.#feedback = [];
    return text === "" ? block : `${block}\n\n${text}`;
  }

  /**
   * A proposed tool call. Returns the watchdog's halt when it cuts the turn: the session is
   * halted at once; the caller records the trip with `recordCut` once the call's result row is
   * committed, so the trip frame sits right before the turn's `canceled`.
   */
  async observeToolCall(turn: TurnGuardState, call: ToolCall): Promise<Trip | undefined> {
    const mode = this.#guardrails.config.watchdog;
    if (mode === "off") return undefined;
    const signal = turn.detector.observe(call);
    if (!signal) return undefined;
    this.#deps.logWarning(`watchdog ${signal.severity} (${signal.detector}): ${signal.message}`);
    const trip = this.#guardrails.onWatchdogSignal(signal);
    if (trip) return trip;
    await this.#deps.journal.append([
      {
        ...this.#deps.journal.header(turn.invocationId, WATCHDOG_SIGNAL_AUTHOR),
        kind: "audit",
        name: "watchdog-signal",
        metadata: { source: "agent", mode, ...signal },
      },
    ]);
    if (mode === "feedback" || mode === "enforce") this.#feedback.push(signal);
    return undefined;
  }

  /** Record a trip that cuts the running turn (row, then `guardrail-trip` with halted_turn). */
  recordCut(turn: TurnGuardState, trip: Trip): Promise<void> {
    return this.#record(trip, turn.invocationId, true);
  }

  /**
   * A priced response of the turn (cost of the turn so far, session spend including it).
   * Returns whether the turn must be cut: a trip on a final response lets the turn complete.
   */
  async observeSpend(
    turn: TurnGuardState,
    turnCostUsd: number,
    sessionCostUsd: number,
    final: boolean,
  ): Promise<boolean> {
    const trip = this.#guardrails.onSpend(turnCostUsd, sessionCostUsd, turn.costTripped);
    if (!trip) return false;
    if (trip.scope !== "session") turn.costTripped = true;
    await this.#record(trip, turn.invocationId, !final);
    return !final;
  }

  /** The turn ended; one that made model calls without a per-turn trip breaks the streak. */
  endTurn(turn: TurnGuardState, madeModelCalls: boolean): void {
    if (madeModelCalls) this.#guardrails.onTurnEnded(turn.costTripped);
  }

  info(): GuardrailInfo {
    return this.#guardrails.info(this.#deps.sessionCostUsd());
  }

  /** POST /guardrails/reset: 400 invalid, 409 would re-trip; the row commits before the state changes. */
  async reset(request: ResetRequest, caller: string | undefined): Promise<ResetOutcome> {
    const plan = this.#guardrails.planReset(request, this.#deps.sessionCostUsd());
    if (plan.kind === "invalid") throw new SparError("bad_request", plan.message);
    if (plan.kind === "would-retrip") {
      // 409 whose body is a reset response with `reset: []` (docs/agent.md#guardrails, Reset; D11).
      const body: ResetOutcome = { reset: [], budget_added_usd: 0, guardrails: this.info(), message: plan.message };
      throw new SparError("conflict", plan.message, { ...body });
    }
    if (plan.changed) {
      await this.#deps.journal.append([
        {
          ...this.#deps.journal.header(RESET_INVOCATION, RESET_AUTHOR),
          kind: "audit",
          name: "attach-guardrail-reset",
          metadata: resetMetadata(plan.record, caller),
        },
      ]);
      this.#guardrails.applyReset(plan.record);
    }
    return {
      reset: plan.record.reset,
      budget_added_usd: plan.record.budgetAddedUsd,
      guardrails: this.info(),
      message: plan.message,
    };
  }

  async #record(trip: Trip, turnInvocationId: string | undefined, haltedTurn: boolean): Promise<void> {
    this.#deps.logWarning(`guardrail trip (${trip.guardrail}/${trip.scope}): ${trip.reason}`);
    try {
      await this.#deps.journal.append([
        {
          ...this.#deps.journal.header(TRIP_INVOCATION, TRIP_AUTHOR),
          kind: "audit",
          name: "guardrail-trip",
          metadata: tripMetadata(trip, turnInvocationId),
        },
      ]);
    } finally {
      // The trip holds in memory even if its row could not be written; the frame still tells
      // attached clients, and GET /guardrails stays authoritative.
      this.#deps.journal.frame({
        type: "guardrail-trip",
        guardrail: trip.guardrail,
        reason: trip.reason,
        haltedTurn,
      });
    }
  }
}

/** Watchdog signals recorded after the last prompt: feedback the next prompt still owes. */
function pendingFeedback(rows: readonly CommittedRow[]): WatchdogSignal[] {
  const signals: WatchdogSignal[] = [];
  for (const { event } of rows) {
    if (event.kind === "user-message") signals.length = 0;
    else if (event.kind === "audit" && event.author === WATCHDOG_SIGNAL_AUTHOR) {
      const { detector, severity, message } = event.metadata;
      if (
        (detector === "repeated-tool-call" || detector === "alternating-tool-cycle") &&
        (severity === "warning" || severity === "critical") &&
        typeof message === "string"
      ) {
        signals.push({ detector, severity, message });
      }
    }
  }
  return signals;
}
