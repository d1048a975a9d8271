import { expect, test } from "bun:test";
import { resolveAutoContinue, resolveGuardrailConfig } from "../../../src/cli/guardrail-flags.ts";
import type { FlagValue } from "../../../src/config/flag-spec.ts";

const flags = (entries: Record<string, FlagValue> = {}) => new Map(Object.entries(entries));
const config = (entries: Record<string, unknown> = {}) => new Map(Object.entries(entries));

test("guardrail defaults, flags over config keys, and errors naming where a bad value came from", () => {
  expect(resolveGuardrailConfig(flags(), config())).toEqual({
    ok: true,
    value: { watchdog: "enforce", maxTurnUsd: 0, maxSessionUsd: 0 },
  });
  expect(
    resolveGuardrailConfig(
      flags({ "max-session-usd": "2.50" }),
      config({ "agent.cost_ceiling.max_session_usd": 9, "agent.watchdog": "warn" }),
    ),
  ).toEqual({
    ok: true,
    value: { watchdog: "warn", maxTurnUsd: 0, maxSessionUsd: 2.5 },
  });
  expect(resolveGuardrailConfig(flags({ watchdog: "loud" }), config())).toEqual({
    ok: false,
    error: "--watchdog must be one of off, warn, feedback, enforce",
  });
  expect(resolveGuardrailConfig(flags(), config({ "agent.cost_ceiling.max_turn_usd": -1 }))).toEqual({
    ok: false,
    error: "config key agent.cost_ceiling.max_turn_usd must be a non-negative amount in USD (e.g. 2.50)",
  });
  expect(resolveGuardrailConfig(flags({ "max-turn-usd": "lots" }), config()).ok).toBe(false);
});

test("auto-continue: on by default, opted out by {agent:{auto_continue:{enabled:false}}}, bounds checked", () => {
  const defaults = resolveAutoContinue(flags(), config());
  expect(defaults).toEqual({
    ok: true,
    value: {
      enabled: true,
      freshnessMs: 600_000,
      backoffMs: 2000,
      maxPerBoot: 50,
      maxPerSession: 10,
      crashLoopBoots: 3,
      crashLoopWindowMs: 600_000,
    },
  });
  const off = resolveAutoContinue(flags(), config({ "agent.auto_continue.enabled": false }));
  expect(off.ok && off.value.enabled).toBe(false);
  const tuned = resolveAutoContinue(
    flags({ "auto-continue-freshness": "30m", "auto-continue-max-per-session": 5 }),
    config(),
  );
  expect(tuned.ok && [tuned.value.freshnessMs, tuned.value.maxPerSession]).toEqual([1_800_000, 5]);
  expect(resolveAutoContinue(flags({ "auto-continue-max-per-boot": -1 }), config())).toEqual({
    ok: false,
    error: "--auto-continue-max-per-boot must be an integer from 0 to 100000",
  });
  expect(resolveAutoContinue(flags(), config({ "agent.auto_continue.enabled": "yes" }))).toEqual({
    ok: false,
    error: "config key agent.auto_continue.enabled must be true or false",
  });
});
