/**
 * A session's guardrails: the watchdog halt (a critical loop signal under `enforce`) and the
 * cost ceiling (per-turn bound, per-session bound plus budget added on reset, and the halt after
 * three consecutive per-turn trips). Decides trips, pre-flight refusals, resets and the
 * GET /guardrails body; the actor commits the rows that record them. The state is rebuilt from
 * those rows under the CURRENT configuration (a watchdog halt needs `enforce` now; budget only
 * counts while a per-session ceiling is configured; a spend halt holds only while spend is still
 * at the ceiling). Pure: no clocks, no I/O.
 */
import type { WatchdogMode, WatchdogSignal } from "./watchdog.ts";

export type GuardrailName = "watchdog" | "cost_ceiling";
export const GUARDRAIL_NAMES: readonly GuardrailName[] = ["watchdog", "cost_ceiling"];

/** Consecutive per-turn cost trips that halt the session. */
export const TURN_TRIP_STREAK = 3;

export interface GuardrailConfig {
  watchdog: WatchdogMode;
  /** 0 means no per-turn ceiling. */
  maxTurnUsd: number;
  /** 0 means no per-session ceiling. */
  maxSessionUsd: number;
}

export type TripScope = "watchdog" | "turn" | "turn-streak" | "session";

/** A trip as decided here and recorded in the `agent/guardrail-trip` row. */
export interface Trip {
  guardrail: GuardrailName;
  scope: TripScope;
  reason: string;
  /** The session refuses new turns until a reset. */
  halted: boolean;
  consecutiveTurnTrips?: number;
}

/** Metadata of a committed reset row (`attach/guardrail-reset`). */
export interface ResetRecord {
  reset: GuardrailName[];
  budgetAddedUsd: number;
}

export interface ResetRequest {
  /** `all` or absent: everything tripped. */
  guardrail?: GuardrailName | "all";
  additionalBudgetUsd?: number;
}

export type ResetPlan =
  | { kind: "invalid"; message: string }
  | { kind: "would-retrip"; message: string }
  | { kind: "ok"; record: ResetRecord; changed: boolean; message: string };

export interface GuardrailInfo {
  watchdog: { mode: WatchdogMode; tripped: boolean; reason: string };
  cost_ceiling: {
    max_turn_usd: number;
    max_session_usd: number;
    session_cost_usd: number;
    tripped: boolean;
    reason: string;
    would_retrip: boolean;
    budget_added_usd: number;
    consecutive_turn_trips: number;
  };
  halted: boolean;
}

const usd = (value: number) => `$${value.toFixed(4)}`;
const RESET_HINT = "POST /guardrails/reset to resume";

export class Guardrails {
  readonly config: GuardrailConfig;
  #watchdogHalt: string | undefined;
  #costHalt: { scope: "session" | "turn-streak"; reason: string } | undefined;
  #turnTrips = 0;
  #budgetUsd = 0;

  constructor(config: GuardrailConfig) {
    this.config = config;
  }

  /** The guardrail holding the session halted, if any (watchdog first). */
  get halted(): { guardrail: GuardrailName; reason: string } | undefined {
    if (this.#watchdogHalt !== undefined) return { guardrail: "watchdog", reason: this.#watchdogHalt };
    if (this.#costHalt !== undefined) return { guardrail: "cost_ceiling", reason: this.#costHalt.reason };
    return undefined;
  }

  get budgetAddedUsd(): number {
    return this.#budgetUsd;
  }

  /** The per-session bound in force: the configured ceiling plus budget added by resets. */
  effectiveSessionCeiling(extraBudget = 0): number {
    return this.config.maxSessionUsd > 0 ? this.config.maxSessionUsd + this.#budgetUsd + extraBudget : 0;
  }

  /** A reset without new budget would trip again at once: spend is at the per-session bound. */
  wouldRetrip(sessionCostUsd: number, extraBudget = 0): boolean {
    const ceiling = this.effectiveSessionCeiling(extraBudget);
    return ceiling > 0 && sessionCostUsd >= ceiling;
  }

  /**
   * Before a turn starts. A halted session refuses it; spend already at the per-session bound
   * (a ceiling lowered since, or spend recorded by a previous run) trips now.
   */
  preflight(sessionCostUsd: number): { refuse: { guardrail: GuardrailName; reason: string }; trip?: Trip } | undefined {
    const held = this.halted;
    if (held) return { refuse: held };
    if (!this.wouldRetrip(sessionCostUsd)) return undefined;
    const trip = this.#sessionTrip(sessionCostUsd);
    return { refuse: { guardrail: "cost_ceiling", reason: trip.reason }, trip };
  }

  /**
   * A model response of the running turn was priced. `turnTripped`: this turn already tripped
   * its per-turn bound (one trip per turn).
   */
  onSpend(turnCostUsd: number, sessionCostUsd: number, turnTripped: boolean): Trip | undefined {
    if (this.halted) return undefined;
    if (this.wouldRetrip(sessionCostUsd)) return this.#sessionTrip(sessionCostUsd);
    const max = this.config.maxTurnUsd;
    if (max <= 0 || turnTripped || turnCostUsd < max) return undefined;
    this.#turnTrips++;
    const streak = this.#turnTrips;
    if (streak >= TURN_TRIP_STREAK) {
      const reason = `${TURN_TRIP_STREAK} consecutive turns reached the per-turn cost ceiling ${usd(max)}; the session is halted: ${RESET_HINT}`;
      this.#costHalt = { scope: "turn-streak", reason };
      return { guardrail: "cost_ceiling", scope: "turn-streak", reason, halted: true, consecutiveTurnTrips: streak };
    }
    const reason = `turn spend ${usd(turnCostUsd)} reached the per-turn cost ceiling ${usd(max)}; the turn was ended (${streak} of ${TURN_TRIP_STREAK} consecutive trips halt the session; ${RESET_HINT} clears the count)`;
    return { guardrail: "cost_ceiling", scope: "turn", reason, halted: false, consecutiveTurnTrips: streak };
  }

  /** A critical loop signal; only `enforce` halts. */
  onWatchdogSignal(signal: WatchdogSignal): Trip | undefined {
    if (this.config.watchdog !== "enforce" || signal.severity !== "critical" || this.#watchdogHalt !== undefined)
      return undefined;
    const reason = `watchdog (enforce): ${signal.message}; the turn was cancelled and the session is halted: ${RESET_HINT}`;
    this.#watchdogHalt = reason;
    return { guardrail: "watchdog", scope: "watchdog", reason, halted: true };
  }

  /** A turn that made model calls ended; one without a per-turn trip breaks the streak. */
  onTurnEnded(tripped: boolean): void {
    if (!tripped) this.#turnTrips = 0;
  }

  /** Decide a reset without changing anything; `applyReset` commits the decision. */
  planReset(request: ResetRequest, sessionCostUsd: number): ResetPlan {
    const target = request.guardrail ?? "all";
    const budget = request.additionalBudgetUsd ?? 0;
    if (!Number.isFinite(budget) || budget < 0)
      return { kind: "invalid", message: "additional_budget_usd must be a non-negative number" };
    if (target === "watchdog" && request.additionalBudgetUsd !== undefined) {
      return {
        kind: "invalid",
        message: "additional_budget_usd applies to the cost_ceiling guardrail, not to a watchdog reset",
      };
    }
    const costTargeted = target !== "watchdog";
    const applicableBudget = costTargeted && this.config.maxSessionUsd > 0 ? budget : 0;
    if (costTargeted && this.wouldRetrip(sessionCostUsd, applicableBudget)) {
      const ceiling = this.effectiveSessionCeiling(applicableBudget);
      return {
        kind: "would-retrip",
        message: `session spend ${usd(sessionCostUsd)} is at or above the per-session ceiling ${usd(ceiling)}; a reset would trip again at once: add budget with additional_budget_usd`,
      };
    }
    const reset: GuardrailName[] = [];
    if (target !== "cost_ceiling" && this.#watchdogHalt !== undefined) reset.push("watchdog");
    if (costTargeted && (this.#costHalt !== undefined || this.#turnTrips > 0)) reset.push("cost_ceiling");
    const changed = reset.length > 0 || applicableBudget > 0;
    const parts = [reset.length > 0 ? `reset ${reset.join(" and ")}` : "nothing was tripped"];
    if (applicableBudget > 0)
      parts.push(
        `added ${usd(applicableBudget)} to the per-session ceiling (now ${usd(this.effectiveSessionCeiling(applicableBudget))})`,
      );
    else if (budget > 0) parts.push("no per-session ceiling is configured, so the budget was not applied");
    return { kind: "ok", record: { reset, budgetAddedUsd: applicableBudget }, changed, message: parts.join("; ") };
  }

  /** Apply a committed reset (live, or replayed from its row under the current configuration). */
  applyReset(record: ResetRecord): void {
    if (record.reset.includes("watchdog")) this.#watchdogHalt = undefined;
    if (record.reset.includes("cost_ceiling")) {
      this.#costHalt = undefined;
      this.#turnTrips = 0;
    }
    if (this.config.maxSessionUsd > 0 && Number.isFinite(record.budgetAddedUsd) && record.budgetAddedUsd > 0)
      this.#budgetUsd += record.budgetAddedUsd;
  }

  /**
   * Replay a committed trip under the current configuration: a watchdog halt only under
   * `enforce`; per-turn trips and their streak only while a per-turn ceiling is configured.
   * Spend halts are not replayed: `finishRestore` re-derives them from spend and the bound.
   */
  restoreTrip(trip: Trip): void {
    if (trip.scope === "watchdog") {
      if (this.config.watchdog === "enforce") this.#watchdogHalt = trip.reason;
      return;
    }
    if (this.config.maxTurnUsd <= 0) return;
    // Both rows carry the streak as it stood (GET /guardrails shows it as committed, D166).
    if (trip.scope === "turn" || trip.scope === "turn-streak")
      this.#turnTrips = trip.consecutiveTurnTrips ?? this.#turnTrips + 1;
    if (trip.scope === "turn-streak") this.#costHalt = { scope: "turn-streak", reason: trip.reason };
  }

  /** After replay: a session whose spend is at the bound in force is halted on spend. */
  finishRestore(sessionCostUsd: number): void {
    if (this.#costHalt === undefined && this.wouldRetrip(sessionCostUsd)) this.#sessionTrip(sessionCostUsd);
  }

  info(sessionCostUsd: number): GuardrailInfo {
    return {
      watchdog: {
        mode: this.config.watchdog,
        tripped: this.#watchdogHalt !== undefined,
        reason: this.#watchdogHalt ?? "",
      },
      cost_ceiling: {
        max_turn_usd: this.config.maxTurnUsd,
        max_session_usd: this.effectiveSessionCeiling(),
        session_cost_usd: sessionCostUsd,
        tripped: this.#costHalt !== undefined,
        reason: this.#costHalt?.reason ?? "",
        would_retrip: this.wouldRetrip(sessionCostUsd),
        budget_added_usd: this.#budgetUsd,
        consecutive_turn_trips: this.#turnTrips,
      },
      halted: this.halted !== undefined,
    };
  }

  #sessionTrip(sessionCostUsd: number): Trip {
    const reason = `session spend ${usd(sessionCostUsd)} reached the per-session cost ceiling ${usd(this.effectiveSessionCeiling())}; the session is halted: ${RESET_HINT} with additional_budget_usd`;
    this.#costHalt = { scope: "session", reason };
    return { guardrail: "cost_ceiling", scope: "session", reason, halted: true };
  }
}
