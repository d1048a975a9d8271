import { expect, test } from "bun:test";
import type { CommittedRow, SessionEvent } from "../../../src/core/events.ts";
import {
  RESET_AUTHOR,
  TRIP_AUTHOR,
  resetMetadata,
  restoreGuardrails,
  tripMetadata,
} from "../../../src/core/guardrail-rows.ts";
import { type GuardrailConfig, Guardrails } from "../../../src/core/guardrails.ts";
import { ZERO_USAGE } from "../../../src/core/usage.ts";

const config = (overrides: Partial<GuardrailConfig> = {}): GuardrailConfig => ({
  watchdog: "enforce",
  maxTurnUsd: 0,
  maxSessionUsd: 0,
  ...overrides,
});
const critical = { detector: "repeated-tool-call" as const, severity: "critical" as const, message: "loop" };

test("per-session bound: reached halts, preflight refuses, reset needs budget (409 plan), budget clears", () => {
  const guard = new Guardrails(config({ maxSessionUsd: 1 }));
  expect(guard.onSpend(0.5, 0.5, false)).toBeUndefined();
  const trip = guard.onSpend(0.6, 1.1, false);
  expect(trip).toMatchObject({ guardrail: "cost_ceiling", scope: "session", halted: true });
  expect(guard.preflight(1.1)?.refuse.guardrail).toBe("cost_ceiling");
  expect(guard.info(1.1).cost_ceiling).toMatchObject({ tripped: true, would_retrip: true });
  expect(guard.planReset({}, 1.1).kind).toBe("would-retrip");
  expect(guard.planReset({ additionalBudgetUsd: 0.05 }, 1.1).kind).toBe("would-retrip");
  const plan = guard.planReset({ guardrail: "cost_ceiling", additionalBudgetUsd: 1 }, 1.1);
  expect(plan).toMatchObject({ kind: "ok", record: { reset: ["cost_ceiling"], budgetAddedUsd: 1 } });
  if (plan.kind === "ok") guard.applyReset(plan.record);
  expect(guard.halted).toBeUndefined();
  expect(guard.info(1.1).cost_ceiling).toMatchObject({
    max_session_usd: 2,
    tripped: false,
    would_retrip: false,
    budget_added_usd: 1,
  });
});

test("per-turn bound: one trip per turn, a clean turn breaks the streak, three in a row halt", () => {
  const guard = new Guardrails(config({ maxTurnUsd: 0.1 }));
  expect(guard.onSpend(0.1, 0.1, false)).toMatchObject({ scope: "turn", halted: false, consecutiveTurnTrips: 1 });
  expect(guard.onSpend(0.2, 0.2, true)).toBeUndefined();
  guard.onTurnEnded(true);
  guard.onSpend(0.01, 0.21, false);
  guard.onTurnEnded(false);
  expect(guard.info(0.21).cost_ceiling.consecutive_turn_trips).toBe(0);
  for (let i = 1; i <= 2; i++) {
    expect(guard.onSpend(0.1, 0.3, false)).toMatchObject({ halted: false, consecutiveTurnTrips: i });
    guard.onTurnEnded(true);
  }
  const third = guard.onSpend(0.1, 0.5, false);
  expect(third).toMatchObject({ scope: "turn-streak", halted: true, consecutiveTurnTrips: 3 });
  expect(third?.reason).toContain("3 consecutive turns");
  expect(guard.preflight(0.5)?.refuse.guardrail).toBe("cost_ceiling");
  const plan = guard.planReset({}, 0.5);
  expect(plan).toMatchObject({ kind: "ok", record: { reset: ["cost_ceiling"] } });
});

test("watchdog: only critical under enforce halts; reset rules", () => {
  expect(new Guardrails(config({ watchdog: "feedback" })).onWatchdogSignal(critical)).toBeUndefined();
  const guard = new Guardrails(config());
  expect(guard.onWatchdogSignal({ ...critical, severity: "warning" })).toBeUndefined();
  expect(guard.onWatchdogSignal(critical)).toMatchObject({ guardrail: "watchdog", halted: true });
  expect(guard.planReset({ guardrail: "watchdog", additionalBudgetUsd: 1 }, 0).kind).toBe("invalid");
  expect(guard.planReset({ additionalBudgetUsd: -1 }, 0).kind).toBe("invalid");
  expect(guard.planReset({ guardrail: "cost_ceiling" }, 0)).toMatchObject({
    kind: "ok",
    changed: false,
    record: { reset: [] },
  });
  expect(guard.planReset({ guardrail: "watchdog" }, 0)).toMatchObject({
    kind: "ok",
    changed: true,
    record: { reset: ["watchdog"] },
  });
});

let seq = 0;
const row = (event: Partial<SessionEvent> & Pick<SessionEvent, "kind" | "author" | "invocationId">): CommittedRow => ({
  seq: ++seq,
  event: { id: `e${seq}`, ts: "2026-11-22T00:00:00Z", ...event } as SessionEvent,
});
const response = (invocationId: string) =>
  row({
    kind: "model-response",
    author: "agent",
    invocationId,
    model: "m",
    text: "",
    toolCalls: [],
    turnComplete: true,
    finishReason: "stop",
    usage: ZERO_USAGE,
    cost: { costUsd: 0, costUsdUncachedReference: 0 },
  } as Partial<SessionEvent> & Pick<SessionEvent, "kind" | "author" | "invocationId">);
const audit = (author: string, metadata: Record<string, unknown>) =>
  row({ kind: "audit", author, invocationId: "x", name: "n", metadata } as Partial<SessionEvent> &
    Pick<SessionEvent, "kind" | "author" | "invocationId">);

test("restore: a watchdog halt comes back under enforce only", () => {
  const rows = [
    response("t1"),
    audit(TRIP_AUTHOR, tripMetadata({ guardrail: "watchdog", scope: "watchdog", reason: "loop", halted: true }, "t1")),
  ];
  expect(restoreGuardrails(rows, config(), 0).halted?.guardrail).toBe("watchdog");
  expect(restoreGuardrails(rows, config({ watchdog: "warn" }), 0).halted).toBeUndefined();
  const reset = [...rows, audit(RESET_AUTHOR, resetMetadata({ reset: ["watchdog"], budgetAddedUsd: 0 }, "olga"))];
  expect(restoreGuardrails(reset, config(), 0).halted).toBeUndefined();
});

test("restore: spend halts follow the bound in force; budget only counts with a per-session ceiling", () => {
  const rows = [
    response("t1"),
    audit(TRIP_AUTHOR, tripMetadata({ guardrail: "cost_ceiling", scope: "session", reason: "r", halted: true }, "t1")),
  ];
  expect(restoreGuardrails(rows, config({ maxSessionUsd: 1 }), 1.2).halted?.guardrail).toBe("cost_ceiling");
  expect(restoreGuardrails(rows, config({ maxSessionUsd: 2 }), 1.2).halted).toBeUndefined();
  expect(restoreGuardrails(rows, config(), 1.2).halted).toBeUndefined();
  const withBudget = [
    ...rows,
    audit(RESET_AUTHOR, resetMetadata({ reset: ["cost_ceiling"], budgetAddedUsd: 1 }, undefined)),
  ];
  expect(restoreGuardrails(withBudget, config({ maxSessionUsd: 1 }), 1.2).halted).toBeUndefined();
  expect(restoreGuardrails(withBudget, config({ maxSessionUsd: 1 }), 1.2).info(1.2).cost_ceiling.max_session_usd).toBe(
    2,
  );
});

test("restore: the per-turn streak survives, and a clean turn after it breaks it", () => {
  const trip = (turn: string, n: number) =>
    audit(
      TRIP_AUTHOR,
      tripMetadata(
        { guardrail: "cost_ceiling", scope: "turn", reason: "r", halted: false, consecutiveTurnTrips: n },
        turn,
      ),
    );
  const rows = [response("t1"), trip("t1", 1), response("t2"), trip("t2", 2)];
  expect(restoreGuardrails(rows, config({ maxTurnUsd: 0.1 }), 0).info(0).cost_ceiling.consecutive_turn_trips).toBe(2);
  expect(
    restoreGuardrails([...rows, response("t3")], config({ maxTurnUsd: 0.1 }), 0).info(0).cost_ceiling
      .consecutive_turn_trips,
  ).toBe(0);
  const streak = [
    ...rows,
    response("t3"),
    audit(
      TRIP_AUTHOR,
      tripMetadata(
        {
          guardrail: "cost_ceiling",
          scope: "turn-streak",
          reason: "3 in a row",
          halted: true,
          consecutiveTurnTrips: 3,
        },
        "t3",
      ),
    ),
  ];
  expect(restoreGuardrails(streak, config({ maxTurnUsd: 0.1 }), 0).halted?.reason).toBe("3 in a row");
  expect(restoreGuardrails(streak, config(), 0).halted).toBeUndefined();
});

test("a restored turn-streak halt shows the streak it was committed with (3), not the last per-turn trip's (2)", () => {
  const before = new Guardrails(config({ maxTurnUsd: 0.1 }));
  const trips = [1, 2, 3].map(() => {
    const trip = before.onSpend(0.1, 0.1, false);
    before.onTurnEnded(true);
    return trip;
  });
  expect(before.info(0.3).cost_ceiling.consecutive_turn_trips).toBe(3);
  const after = new Guardrails(config({ maxTurnUsd: 0.1 }));
  for (const trip of trips) if (trip) after.restoreTrip(trip);
  after.finishRestore(0.3);
  expect(after.info(0.3).cost_ceiling).toMatchObject({ tripped: true, consecutive_turn_trips: 3 });
  expect(after.halted?.guardrail).toBe("cost_ceiling");
});
