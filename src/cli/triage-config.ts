/**
 * The triage tools' config keys (config file only, no flags; D465-D467):
 * `permissions.require_plan_artifact` (boolean, default false) and `tools.wait_and_verify`
 * (`poll_allow`: tool names, `max_timeout_seconds`: 1-3600, default 300, `max_attempts`: 1-1000,
 * default 40). wait_and_verify is offered only when `poll_allow` names at least one tool; a
 * ceiling set without it is an error rather than ignored.
 */
import { type Result, err, ok } from "../core/result.ts";
import type { TriageSettings } from "../core/plan-gate.ts";
import { DEFAULT_MAX_ATTEMPTS, DEFAULT_MAX_TIMEOUT_SECONDS } from "../core/wait-verify.ts";
import type { SettingReader } from "../config/setting-reader.ts";

const PREFIX = "tools.wait_and_verify.";

function bounded(config: ReadonlyMap<string, unknown>, key: string, max: number, fallback: number): Result<number> {
  if (!config.has(key)) return ok(fallback);
  const value = config.get(key);
  return typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= max
    ? ok(value)
    : err(`config key ${key} must be a whole number from 1 to ${max}`);
}

/** The settings, or undefined when neither plan-first nor wait_and_verify is configured. */
export function resolveTriageSettings(
  read: SettingReader,
  config: ReadonlyMap<string, unknown>,
): Result<TriageSettings | undefined> {
  const requirePlan = read.configValue("permissions.require_plan_artifact", "boolean", false);
  if (!requirePlan.ok) return requirePlan;
  const pollAllow = read.configStrings(`${PREFIX}poll_allow`, "tool names");
  if (!pollAllow.ok) return pollAllow;
  const maxTimeout = bounded(config, `${PREFIX}max_timeout_seconds`, 3600, DEFAULT_MAX_TIMEOUT_SECONDS);
  if (!maxTimeout.ok) return maxTimeout;
  const maxAttempts = bounded(config, `${PREFIX}max_attempts`, 1000, DEFAULT_MAX_ATTEMPTS);
  if (!maxAttempts.ok) return maxAttempts;
  const ceilingSet = config.has(`${PREFIX}max_timeout_seconds`) || config.has(`${PREFIX}max_attempts`);
  if (pollAllow.value.length === 0 && ceilingSet)
    return err(`config key ${PREFIX}poll_allow must name the tools wait_and_verify may poll (its ceilings are set)`);
  const settings: TriageSettings = { requirePlan: requirePlan.value };
  if (pollAllow.value.length > 0)
    settings.waitAndVerify = {
      pollAllow: [...new Set(pollAllow.value)],
      maxTimeoutSeconds: maxTimeout.value,
      maxAttempts: maxAttempts.value,
    };
  return settings.requirePlan || settings.waitAndVerify ? ok(settings) : ok(undefined);
}
