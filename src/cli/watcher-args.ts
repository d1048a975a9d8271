/**
 * Argument parsing of `spar watcher watch`: the generic flag parser (src/config/flag-parser.ts) for every
 * single-valued flag, plus the repeatable `--severity`. Each value is converted and bounds-checked
 * here; defaults go through the same conversion, so a bad default in the table fails its test.
 */
import { formatDuration, parseDuration } from "../core/duration.ts";
import { type Result, err, ok } from "../core/result.ts";
import type { FlagSpec, FlagValue } from "../config/flag-spec.ts";
import { parseFlags, renderHelp } from "../config/flag-parser.ts";
import { type Bounds, type WatcherFlag, WATCHER_FLAGS } from "./watcher-flags.ts";

export interface WatcherArgs {
  /** Effective value of every flag: the one given, else its default (absent when it has none). */
  values: Map<string, FlagValue>;
  /** Names of the flags given on the command line. */
  given: Set<string>;
  /** Every `--severity` value, in order. */
  severity: string[];
  help: boolean;
}

const BY_NAME = new Map(WATCHER_FLAGS.map((flag) => [flag.name, flag]));

function genericSpec(flag: WatcherFlag): FlagSpec {
  const kind = flag.kind === "float" || flag.kind === "repeatable" ? "string" : flag.kind;
  const defaultText = flag.defaultText ?? flag.defaultValue;
  return { name: flag.name, kind, help: flag.help, ...(defaultText === undefined ? {} : { defaultText }) };
}

/** The help text of `spar watcher watch --help`. */
export function watcherHelp(): string {
  return renderHelp(
    "spar watcher watch --daemon-url=URL --token-env=VAR [flags]",
    "Streams Kubernetes warning events into per-incident sessions on an agent daemon (or a webhook receiver).\n" +
      "Example: spar watcher watch --daemon-url=http://127.0.0.1:7777 --token-env=WATCHER_TOKEN --owner=oncall@example.com --cluster-name=prod\n" +
      "Durations use Go notation (30s, 5m0s, 1h30m0s).",
    WATCHER_FLAGS.map(genericSpec),
  );
}

function describeBounds(bounds: Bounds, unit: "duration" | "number"): string {
  const show = (value: number) => (unit === "duration" ? formatDuration(value) : String(value));
  const parts: string[] = [];
  if (bounds.min !== undefined) parts.push(`at least ${show(bounds.min)}`);
  if (bounds.above !== undefined) parts.push(`above ${show(bounds.above)}`);
  if (bounds.max !== undefined) parts.push(`at most ${show(bounds.max)}`);
  if (bounds.below !== undefined) parts.push(`below ${show(bounds.below)}`);
  return `${parts.join(" and ")}${bounds.zeroOk ? " (or 0)" : ""}`;
}

function withinBounds(value: number, bounds: Bounds): boolean {
  if (bounds.zeroOk && value === 0) return true;
  if (bounds.min !== undefined && value < bounds.min) return false;
  if (bounds.above !== undefined && value <= bounds.above) return false;
  if (bounds.max !== undefined && value > bounds.max) return false;
  if (bounds.below !== undefined && value >= bounds.below) return false;
  return true;
}

/** One flag's value from its text (a flag or a table default): typed, in bounds, among its choices. */
export function convertWatcherValue(flag: WatcherFlag, raw: FlagValue): Result<FlagValue> {
  let value: FlagValue = raw;
  if (flag.kind === "float") {
    const number =
      typeof raw === "number"
        ? raw
        : /^-?(\d+\.?\d*|\.\d+)(e-?\d+)?$/i.test(String(raw).trim())
          ? Number(raw)
          : Number.NaN;
    if (!Number.isFinite(number)) return err(`--${flag.name} takes a number, got ${JSON.stringify(raw)}`);
    value = number;
  } else if (flag.kind === "int" && typeof raw === "string") {
    if (!/^-?\d+$/.test(raw)) return err(`--${flag.name} takes an integer, got ${JSON.stringify(raw)}`);
    value = Number.parseInt(raw, 10);
  } else if (flag.kind === "duration" && typeof raw === "string") {
    const parsed = parseDuration(raw);
    if (!parsed.ok) return err(`--${flag.name}: ${parsed.error}`);
    value = parsed.value;
  } else if (flag.kind === "bool" && typeof raw === "string") {
    if (raw !== "true" && raw !== "false") return err(`--${flag.name} takes true or false, got ${JSON.stringify(raw)}`);
    value = raw === "true";
  }
  if (typeof value === "number" && flag.bounds && !withinBounds(value, flag.bounds)) {
    const shown = flag.kind === "duration" ? formatDuration(value) : String(value);
    return err(
      `--${flag.name}=${shown} is out of range: must be ${describeBounds(flag.bounds, flag.kind === "duration" ? "duration" : "number")}`,
    );
  }
  if (typeof value === "string" && flag.choices && !flag.choices.includes(value)) {
    return err(`--${flag.name} must be one of ${flag.choices.join(", ")}, got ${JSON.stringify(value)}`);
  }
  return ok(value);
}

/** Takes `--severity=V` / `--severity V` out of argv (the generic parser keeps only the last). */
function extractRepeatable(argv: readonly string[], name: string): Result<{ rest: string[]; values: string[] }> {
  const rest: string[] = [];
  const values: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    if (arg === `--${name}`) {
      const next = argv[++i];
      if (next === undefined || next.startsWith("--")) return err(`--${name} needs a value`);
      values.push(next);
    } else if (arg.startsWith(`--${name}=`)) values.push(arg.slice(name.length + 3));
    else rest.push(arg);
  }
  return ok({ rest, values });
}

export function parseWatcherArgs(argv: readonly string[]): Result<WatcherArgs> {
  const severity = extractRepeatable(argv, "severity");
  if (!severity.ok) return severity;
  const parsed = parseFlags(
    WATCHER_FLAGS.filter((flag) => flag.kind !== "repeatable").map(genericSpec),
    severity.value.rest,
  );
  if (!parsed.ok) return parsed;
  if (parsed.value.positionals.length > 0)
    return err(`unexpected argument ${JSON.stringify(parsed.value.positionals[0])}`);
  const values = new Map<string, FlagValue>();
  const given = new Set<string>(parsed.value.values.keys());
  if (severity.value.values.length > 0) given.add("severity");
  for (const flag of WATCHER_FLAGS) {
    if (flag.kind === "repeatable") continue;
    const raw = parsed.value.values.get(flag.name) ?? flag.defaultValue;
    if (raw === undefined) continue;
    const value = convertWatcherValue(flag, raw);
    if (!value.ok) return value;
    values.set(flag.name, value.value);
  }
  return ok({ values, given, severity: severity.value.values, help: parsed.value.help });
}

/** The table entry of a flag (throws on a name not in the table: a programming error). */
export function watcherFlag(name: string): WatcherFlag {
  const flag = BY_NAME.get(name);
  if (!flag) throw new Error(`no watcher flag --${name}`);
  return flag;
}
