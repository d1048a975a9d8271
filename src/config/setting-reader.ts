/**
 * The one reader of settings, for the agent and the watcher alike: where a setting comes from (its
 * flag first, then its config key, else its declared default or the caller's), and its typed,
 * bounded value. Every read answers a Result whose error names the flag or key exactly as it was
 * given. Asking for a config key marks it read, so a key nothing reads is reported (D164).
 */
import { MAX_TIMER_MS, formatDuration, parseDuration } from "../core/duration.ts";
import { type Result, err, ok } from "../core/result.ts";
import type { Bounds, FlagSpec, FlagValue } from "./flag-spec.ts";

/** Where a setting was found: `--name` or `config key a.b`, and the raw value there. */
export type SettingSource = { from: string; value: unknown };
export type Setting = SettingSource | undefined;

function settingOf(
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
export function readDuration(source: SettingSource): Result<number> {
  const fromFlag = source.from.startsWith("--");
  if (typeof source.value === "number" && fromFlag) return ok(source.value);
  if (typeof source.value === "string") return parseDuration(source.value);
  return err(
    `not a duration: write it in Go notation such as "30s", "5m" or "1h30m0s"${typeof source.value === "number" ? " (a bare number has no unit)" : ""}`,
  );
}

/** A duration setting that drives a timer: Go notation, from `minMs` to the longest timer. */
export function timerDuration(source: SettingSource, minMs: number): Result<number> {
  const parsed = readDuration(source);
  if (!parsed.ok) return err(`${source.from}: ${parsed.error}`);
  if (parsed.value < minMs) return err(`${source.from} must be at least ${minMs}ms`);
  if (parsed.value > MAX_TIMER_MS)
    return err(
      `${source.from} must be at most ${formatDuration(MAX_TIMER_MS)} (the longest timer JavaScript can hold)`,
    );
  return parsed;
}

/** Bounds in words: `at least 1 and at most 5 (or 0)`. */
export function describeBounds(bounds: Bounds, unit: "duration" | "number"): string {
  const show = (value: number) => (unit === "duration" ? formatDuration(value) : String(value));
  const parts: string[] = [];
  if (bounds.min !== undefined) parts.push(`at least ${show(bounds.min)}`);
  if (bounds.above !== undefined) parts.push(`above ${show(bounds.above)}`);
  if (bounds.max !== undefined) parts.push(`at most ${show(bounds.max)}`);
  if (bounds.below !== undefined) parts.push(`below ${show(bounds.below)}`);
  return `${parts.join(" and ")}${bounds.zeroOk ? " (or 0)" : ""}`;
}

export function withinBounds(value: number, bounds: Bounds): boolean {
  if (bounds.zeroOk && value === 0) return true;
  if (bounds.min !== undefined && value < bounds.min) return false;
  if (bounds.above !== undefined && value <= bounds.above) return false;
  if (bounds.max !== undefined && value > bounds.max) return false;
  if (bounds.below !== undefined && value >= bounds.below) return false;
  return true;
}

/** Text (a flag's, or a declared default) to the setting's kind; a value of the right type passes. */
function convertText(spec: FlagSpec, raw: FlagValue): Result<FlagValue> {
  if (spec.kind === "float") {
    const text = String(raw).trim();
    const number =
      typeof raw === "number" ? raw : /^-?(\d+\.?\d*|\.\d+)(e-?\d+)?$/i.test(text) ? Number(raw) : Number.NaN;
    return Number.isFinite(number) ? ok(number) : err(`--${spec.name} takes a number, got ${JSON.stringify(raw)}`);
  }
  if (typeof raw !== "string") return ok(raw);
  if (spec.kind === "int") {
    if (!/^-?\d+$/.test(raw)) return err(`--${spec.name} takes an integer, got ${JSON.stringify(raw)}`);
    return ok(Number.parseInt(raw, 10));
  }
  if (spec.kind === "duration") {
    const parsed = parseDuration(raw);
    return parsed.ok ? parsed : err(`--${spec.name}: ${parsed.error}`);
  }
  if (spec.kind === "bool") {
    if (raw !== "true" && raw !== "false") return err(`--${spec.name} takes true or false, got ${JSON.stringify(raw)}`);
    return ok(raw === "true");
  }
  return ok(raw);
}

/**
 * A flag's value checked against its declaration alone: typed, in its bounds, among its choices.
 * Used for command-line-only tables whose every default is declared (the watcher's).
 */
export function declaredValue(spec: FlagSpec, raw: FlagValue): Result<FlagValue> {
  const converted = convertText(spec, raw);
  if (!converted.ok) return converted;
  const value = converted.value;
  if (typeof value === "number" && spec.bounds && !withinBounds(value, spec.bounds)) {
    const unit = spec.kind === "duration" ? "duration" : "number";
    const shown = unit === "duration" ? formatDuration(value) : String(value);
    return err(`--${spec.name}=${shown} is out of range: must be ${describeBounds(spec.bounds, unit)}`);
  }
  if (typeof value === "string" && spec.choices && !spec.choices.includes(value))
    return err(`--${spec.name} must be one of ${spec.choices.join(", ")}, got ${JSON.stringify(value)}`);
  return ok(value);
}

/** Typed reads of the settings of one table: flag first, then config key, then the default. */
export class SettingReader {
  readonly #byName: ReadonlyMap<string, FlagSpec>;

  constructor(
    table: readonly FlagSpec[],
    private readonly flags: ReadonlyMap<string, FlagValue>,
    private readonly config: ReadonlyMap<string, unknown> = new Map(),
  ) {
    this.#byName = new Map(table.map((spec) => [spec.name, spec]));
  }

  /** The table entry of a setting (a name not in the table is a programming error). */
  spec(name: string): FlagSpec {
    const spec = this.#byName.get(name);
    if (!spec) throw new Error(`no flag ${name}`);
    return spec;
  }

  setting(name: string): Setting {
    return settingOf(this.flags, this.config, this.spec(name));
  }

  /** How an error names the setting: where it was set, else its flag. */
  from(name: string): string {
    return this.setting(name)?.from ?? `--${name}`;
  }

  /** The effective value from the declaration: the flag, else the declared default (absent: none). */
  declared(name: string): Result<FlagValue | undefined> {
    const spec = this.spec(name);
    const raw = this.flags.get(name) ?? spec.defaultValue;
    return raw === undefined ? ok(undefined) : declaredValue(spec, raw);
  }

  /** The fallback of a read: the caller's (a default computed at startup), else the declared one. */
  #fallback<T extends FlagValue>(spec: FlagSpec, fallback: T | undefined, type: "string" | "boolean" | "number"): T {
    if (fallback !== undefined) return fallback;
    if (spec.defaultValue === undefined) throw new Error(`flag --${spec.name} declares no default`);
    const value = declaredValue(spec, spec.defaultValue);
    if (!value.ok) throw new Error(`flag table: ${value.error}`);
    if (typeof value.value !== type) throw new Error(`flag --${spec.name} declares no ${type} default`);
    return value.value as T;
  }

  /** A non-empty string, trimmed. */
  string(name: string, fallback?: string): Result<string> {
    const found = this.setting(name);
    if (!found) return ok(this.#fallback(this.spec(name), fallback, "string"));
    if (typeof found.value === "string" && found.value.trim() !== "") return ok(found.value.trim());
    return err(`${found.from} must be a non-empty string`);
  }

  bool(name: string, fallback?: boolean): Result<boolean> {
    const found = this.setting(name);
    if (!found) return ok(this.#fallback(this.spec(name), fallback, "boolean"));
    return typeof found.value === "boolean" ? ok(found.value) : err(`${found.from} must be true or false`);
  }

  /** An integer within the declared `bounds.min` to `bounds.max`. */
  int(name: string, fallback?: number): Result<number> {
    const spec = this.spec(name);
    const { min, max } = spec.bounds ?? {};
    if (min === undefined || max === undefined) throw new Error(`flag --${name} declares no min and max`);
    const found = this.setting(name);
    if (!found) return ok(this.#fallback(spec, fallback, "number"));
    const value = found.value;
    if (typeof value === "number" && Number.isInteger(value) && value >= min && value <= max) return ok(value);
    return err(`${found.from} must be an integer from ${min} to ${max}`);
  }

  /** A duration (`30s`, `5m`) from the declared `bounds.min` (else 0) to the longest timer. */
  duration(name: string, fallback?: number): Result<number> {
    const spec = this.spec(name);
    const found = this.setting(name);
    return found ? timerDuration(found, spec.bounds?.min ?? 0) : ok(this.#fallback(spec, fallback, "number"));
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

  /** A string among the declared `choices`. */
  oneOf<T extends string>(name: string): Result<T> {
    const allowed = this.spec(name).choices ?? [];
    const value = this.string(name);
    if (!value.ok) return value;
    if (allowed.includes(value.value)) return ok(value.value as T);
    return err(`${this.from(name)} must be one of ${allowed.join(", ")}`);
  }

  /** A list of strings from a config key (no flag): identities, permission patterns. */
  configStrings(configKey: string, what: string): Result<string[]> {
    if (!this.config.has(configKey)) return ok([]);
    const value = this.config.get(configKey);
    if (Array.isArray(value) && value.every((item) => typeof item === "string"))
      return ok(value.map((item: string) => item.trim()).filter((item) => item !== ""));
    return err(`config key ${configKey} must be a list of ${what}`);
  }

  /** A config-only setting of a primitive type. */
  configValue<T extends "string" | "boolean">(
    configKey: string,
    type: T,
    fallback: T extends "string" ? string : boolean,
  ): Result<T extends "string" ? string : boolean> {
    if (!this.config.has(configKey)) return ok(fallback);
    const value = this.config.get(configKey);
    if (typeof value !== type) return err(`config key ${configKey} must be a ${type}`);
    return ok(value as T extends "string" ? string : boolean);
  }
}
