/**
 * The durable rows guardrails write, and the rebuild of a session's guardrail state from them.
 * Trip: author `agent/guardrail-trip`, invocation `guardrail-trip`, metadata
 * `{source:"agent", guardrail, reason, halted, scope, turn_invocation_id?, consecutive_turn_trips?}`.
 * Reset: author `attach/guardrail-reset`, invocation `attach-guardrail-reset`, metadata
 * `{source:"operator", reset:[...], budget_added_usd, caller?}`. Pure.
 */
import type { AuditEvent, CommittedRow } from "./events.ts";
import {
  type GuardrailConfig,
  type GuardrailName,
  Guardrails,
  type ResetRecord,
  type Trip,
  type TripScope,
} from "./guardrails.ts";

export const TRIP_AUTHOR = "agent/guardrail-trip";
export const TRIP_INVOCATION = "guardrail-trip";
export const RESET_AUTHOR = "attach/guardrail-reset";
export const RESET_INVOCATION = "attach-guardrail-reset";
export const WATCHDOG_SIGNAL_AUTHOR = "agent/watchdog";

export function tripMetadata(trip: Trip, turnInvocationId: string | undefined): Record<string, unknown> {
  const metadata: Record<string, unknown> = {
    source: "agent",
    guardrail: trip.guardrail,
    reason: trip.reason,
    halted: trip.halted,
    scope: trip.scope,
  };
  if (turnInvocationId !== undefined) metadata.turn_invocation_id = turnInvocationId;
  if (trip.consecutiveTurnTrips !== undefined) metadata.consecutive_turn_trips = trip.consecutiveTurnTrips;
  return metadata;
}

export function resetMetadata(record: ResetRecord, caller: string | undefined): Record<string, unknown> {
  const metadata: Record<string, unknown> = {
    source: "operator",
    reset: record.reset,
    budget_added_usd: record.budgetAddedUsd,
  };
  if (caller !== undefined) metadata.caller = caller;
  return metadata;
}

const SCOPES: readonly TripScope[] = ["watchdog", "turn", "turn-streak", "session"];
const isName = (value: unknown): value is GuardrailName => value === "watchdog" || value === "cost_ceiling";

function parseTrip(event: AuditEvent): { trip: Trip; turn: string | undefined } | undefined {
  const m = event.metadata;
  if (!isName(m.guardrail) || typeof m.reason !== "string" || !SCOPES.includes(m.scope as TripScope)) return undefined;
  const trip: Trip = {
    guardrail: m.guardrail,
    scope: m.scope as TripScope,
    reason: m.reason,
    halted: m.halted === true,
  };
  if (typeof m.consecutive_turn_trips === "number") trip.consecutiveTurnTrips = m.consecutive_turn_trips;
  return { trip, turn: typeof m.turn_invocation_id === "string" ? m.turn_invocation_id : undefined };
}

function parseReset(event: AuditEvent): ResetRecord {
  const m = event.metadata;
  const reset = Array.isArray(m.reset) ? m.reset.filter(isName) : [];
  return { reset, budgetAddedUsd: typeof m.budget_added_usd === "number" ? m.budget_added_usd : 0 };
}

/**
 * Replay a session's rows into fresh guardrails under the current configuration. Turn
 * boundaries come from model-response invocations: a turn that made model calls and recorded no
 * per-turn trip breaks the streak, exactly as it did live.
 */
export function restoreGuardrails(
  rows: readonly CommittedRow[],
  config: GuardrailConfig,
  sessionCostUsd: number,
): Guardrails {
  const guardrails = new Guardrails(config);
  let turn: { id: string; tripped: boolean } | undefined;
  for (const { event } of rows) {
    if (event.kind === "model-response" && turn?.id !== event.invocationId) {
      if (turn) guardrails.onTurnEnded(turn.tripped);
      turn = { id: event.invocationId, tripped: false };
    }
    if (event.kind !== "audit") continue;
    if (event.author === TRIP_AUTHOR) {
      const parsed = parseTrip(event);
      if (!parsed) continue;
      if (turn && parsed.turn === turn.id && parsed.trip.scope !== "watchdog") turn.tripped = true;
      guardrails.restoreTrip(parsed.trip);
    } else if (event.author === RESET_AUTHOR) {
      guardrails.applyReset(parseReset(event));
    }
  }
  if (turn) guardrails.onTurnEnded(turn.tripped);
  guardrails.finishRestore(sessionCostUsd);
  return guardrails;
}
