/**
 * Where one setting comes from: its flag first, then its config key, else nothing (the caller's
 * default). Every flag table reads through here, and typed reads answer a Result whose error names
 * the flag or key that was wrong.
 */
import { MAX_TIMER_MS, formatDuration, parseDuration } from "../core/duration.ts";
import { type Result, err, ok } from "../core/result.ts";
import type { FlagSpec, FlagValue } from "./flags.ts";

export type Setting = { from: string; value: unknown } | undefined;

export function settingOf(
  flags: ReadonlyMap<string, FlagValue>,
  config: ReadonlyMap<string, unknown>,
  spec: FlagSpec,
): Setting {
  // Asked of the file even when the flag wins, so the key never reads as unknown (D164).
  const inFile = spec.configKey !== undefined && config.has(spec.configKey);
  if (flags.has(spec.name)) return { from: `--${spec.name}`, value: flags.get(spec.name) };
  if (spec.configKey !== undefined && inFile)
    return { from: `config key ${spec.configKey}`, value: config.get(spec.configKey) };
  return undefined;
}

/**
 * A duration setting's value: a flag arrives parsed (milliseconds), a config value must be Go
 * notation; a bare number in a config file is refused, not guessed at (D164).
 */
export function readDuration(source: { from: string; value: unknown }): Result<number> {
  const fromFlag = source.from.startsWith("--");
  if (typeof source.value === "number" && fromFlag) return ok(source.value);
  if (typeof source.value === "string") return parseDuration(source.value);
  return err(
    `not a duration: write it in Go notation such as "30s", "5m" or "1h30m0s"${typeof source.value === "number" ? " (a bare number has no unit)" : ""}`,
  );
}

/** A duration setting that drives a timer: Go notation, from `minMs` to the longest timer. */
export function timerDuration(source: { from: string; value: unknown }, minMs: number): Result<number> {
  const parsed = readDuration(source);
  if (!parsed.ok) return err(`${source.from}: ${parsed.error}`);
  if (parsed.value < minMs) return err(`${source.from} must be at least ${minMs}ms`);
  if (parsed.value > MAX_TIMER_MS)
    return err(
      `${source.from} must be at most ${formatDuration(MAX_TIMER_MS)} (the longest timer JavaScript can hold)`,
    );
  return parsed;
}

/** Typed reads of the settings of one flag table. */
export class FlagReader {
  constructor(
    private readonly table: readonly FlagSpec[],
    private readonly flags: ReadonlyMap<string, FlagValue>,
    private readonly config: ReadonlyMap<string, unknown>,
  ) {}

  setting(name: string): Setting {
    const spec = this.table.find((candidate) => candidate.name === name);
    if (!spec) throw new Error(`no flag ${name}`);
    return settingOf(this.flags, this.config, spec);
  }

  bool(name: string, fallback: boolean): Result<boolean> {
    const found = this.setting(name);
    if (!found) return ok(fallback);
    return typeof found.value === "boolean" ? ok(found.value) : err(`${found.from} must be true or false`);
  }

  int(name: string, fallback: number, min: number, max: number): Result<number> {
    const found = this.setting(name);
    if (!found) return ok(fallback);
    const value = found.value;
    if (typeof value === "number" && Number.isInteger(value) && value >= min && value <= max) return ok(value);
    return err(`${found.from} must be an integer from ${min} to ${max}`);
  }

  /** A duration (`30s`, `5m`) from `minMs` to the longest timer (these settings drive timers). */
  duration(name: string, fallback: number, minMs: number): Result<number> {
    const found = this.setting(name);
    return found ? timerDuration(found, minMs) : ok(fallback);
  }

  /** A non-negative amount (a number, or a string holding one). */
  amount(name: string, unit: string): Result<number> {
    const found = this.setting(name);
    if (!found) return ok(0);
    const value = typeof found.value === "string" && found.value.trim() !== "" ? Number(found.value) : found.value;
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0)
      return err(`${found.from} must be a non-negative amount in ${unit}`);
    return ok(value);
  }
}
