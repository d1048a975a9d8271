/**
 * Flags and config keys of the guardrails (watchdog mode, cost ceilings) and of auto-continue,
 * read flag first, then config key, then default; a bad value is an error naming where it was
 * set. Owns no behaviour: src/core/guardrails.ts and the runtime use the settings.
 */
import type { GuardrailConfig } from "../core/guardrails.ts";
import { type Result, err, ok } from "../core/result.ts";
import { WATCHDOG_MODES, type WatchdogMode } from "../core/watchdog.ts";
import type { AutoContinueSettings } from "../runtime/auto-continuer.ts";
import { SettingReader } from "../config/setting-reader.ts";
import type { FlagSpec, FlagValue } from "../config/flag-spec.ts";

export type { AutoContinueSettings };

export const GUARDRAIL_FLAGS: readonly FlagSpec[] = [
  {
    name: "watchdog",
    kind: "string",
    help: "loop watchdog: off, warn, feedback ([watchdog] note on the next prompt) or enforce (also cancels the turn and halts the session on a critical loop)",
    defaultText: "enforce",
    configKey: "agent.watchdog",
  },
  {
    name: "max-turn-usd",
    kind: "string",
    help: "per-turn cost ceiling in USD: a turn that reaches it ends; three such turns in a row halt the session (0: none)",
    defaultText: "0",
    configKey: "agent.cost_ceiling.max_turn_usd",
  },
  {
    name: "max-session-usd",
    kind: "string",
    help: "per-session cost ceiling in USD: reaching it halts the session until POST /guardrails/reset adds budget (0: none)",
    defaultText: "0",
    configKey: "agent.cost_ceiling.max_session_usd",
  },
  {
    name: "auto-continue",
    kind: "bool",
    help: "re-drive turns cut by a restart, a transient model error or the output-token cap",
    defaultValue: "true",
    configKey: "agent.auto_continue.enabled",
  },
  {
    name: "auto-continue-freshness",
    kind: "duration",
    help: "only re-drive an interruption younger than this",
    defaultValue: "10m",
    configKey: "agent.auto_continue.freshness",
    bounds: { min: 1000 },
  },
  {
    name: "auto-continue-backoff",
    kind: "duration",
    help: "wait before re-driving a turn that failed transiently (doubles per attempt)",
    defaultValue: "2s",
    configKey: "agent.auto_continue.backoff",
  },
  {
    name: "auto-continue-max-per-boot",
    kind: "int",
    help: "re-drives this daemon starts in one run, all sessions together",
    defaultValue: "50",
    configKey: "agent.auto_continue.max_per_boot",
    bounds: { min: 0, max: 100_000 },
  },
  {
    name: "auto-continue-max-per-session",
    kind: "int",
    help: "re-drives one session may get in one run of the daemon",
    defaultValue: "10",
    configKey: "agent.auto_continue.max_per_session",
    bounds: { min: 0, max: 10_000 },
  },
  {
    name: "auto-continue-crash-loop-boots",
    kind: "int",
    help: "crash-loop breaker: this many unclean stops within the window turn restart re-drives off",
    defaultValue: "3",
    configKey: "agent.auto_continue.crash_loop_boots",
    bounds: { min: 1, max: 1000 },
  },
  {
    name: "auto-continue-crash-loop-window",
    kind: "duration",
    help: "crash-loop breaker window",
    defaultValue: "10m",
    configKey: "agent.auto_continue.crash_loop_window",
    bounds: { min: 1000 },
  },
];

export function resolveGuardrailConfig(
  flags: ReadonlyMap<string, FlagValue>,
  config: ReadonlyMap<string, unknown>,
): Result<GuardrailConfig> {
  const read = new SettingReader(GUARDRAIL_FLAGS, flags, config);
  const mode = read.setting("watchdog");
  let watchdog: WatchdogMode = "enforce";
  if (mode !== undefined) {
    if (typeof mode.value !== "string" || !(WATCHDOG_MODES as readonly string[]).includes(mode.value.trim()))
      return err(`${mode.from} must be one of ${WATCHDOG_MODES.join(", ")}`);
    watchdog = mode.value.trim() as WatchdogMode;
  }
  const maxTurnUsd = read.amount("max-turn-usd", "USD (e.g. 2.50)");
  if (!maxTurnUsd.ok) return maxTurnUsd;
  const maxSessionUsd = read.amount("max-session-usd", "USD (e.g. 2.50)");
  if (!maxSessionUsd.ok) return maxSessionUsd;
  return ok({ watchdog, maxTurnUsd: maxTurnUsd.value, maxSessionUsd: maxSessionUsd.value });
}

export function resolveAutoContinue(
  flags: ReadonlyMap<string, FlagValue>,
  config: ReadonlyMap<string, unknown>,
): Result<AutoContinueSettings> {
  const read = new SettingReader(GUARDRAIL_FLAGS, flags, config);
  const results = {
    enabled: read.bool("auto-continue"),
    freshnessMs: read.duration("auto-continue-freshness"),
    backoffMs: read.duration("auto-continue-backoff"),
    maxPerBoot: read.int("auto-continue-max-per-boot"),
    maxPerSession: read.int("auto-continue-max-per-session"),
    crashLoopBoots: read.int("auto-continue-crash-loop-boots"),
    crashLoopWindowMs: read.duration("auto-continue-crash-loop-window"),
  };
  const settings: Partial<AutoContinueSettings> = {};
  for (const [key, result] of Object.entries(results)) {
    if (!result.ok) return err(result.error);
    (settings as Record<string, unknown>)[key] = result.value;
  }
  return ok(settings as AutoContinueSettings);
}
