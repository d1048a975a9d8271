/**
 * Argument parsing of `spar watcher watch`: the generic flag parser (src/config/flag-parser.ts) for every
 * single-valued flag, plus the repeatable `--severity`. Each value is converted, bounds-checked and
 * defaulted by the one setting reader (src/config/setting-reader.ts) from the table's declaration;
 * defaults go through the same conversion, so a bad default in the table fails its test.
 */
import { type Result, err, ok } from "../core/result.ts";
import type { FlagSpec, FlagValue } from "../config/flag-spec.ts";
import { parseFlags, renderHelp } from "../config/flag-parser.ts";
import { SettingReader } from "../config/setting-reader.ts";
import { WATCHER_FLAGS } from "./watcher-flags.ts";

export interface WatcherArgs {
  /** Effective value of every flag: the one given, else its default (absent when it has none). */
  values: Map<string, FlagValue>;
  /** Names of the flags given on the command line. */
  given: Set<string>;
  /** Every `--severity` value, in order. */
  severity: string[];
  help: boolean;
}

/** As help shows a flag: a number or a repeated value is written as a string. */
function helpSpec(flag: FlagSpec): FlagSpec {
  return flag.kind === "float" || flag.kind === "repeatable" ? { ...flag, kind: "string" } : flag;
}

/** The help text of `spar watcher watch --help`. */
export function watcherHelp(): string {
  return renderHelp(
    "spar watcher watch --daemon-url=URL --token-env=VAR [flags]",
    "Streams Kubernetes warning events into per-incident sessions on an agent daemon (or a webhook receiver).\n" +
      "Example: spar watcher watch --daemon-url=http://127.0.0.1:7777 --token-env=WATCHER_TOKEN --owner=oncall@example.com --cluster-name=prod\n" +
      "Durations use Go notation (30s, 5m0s, 1h30m0s).",
    WATCHER_FLAGS.map(helpSpec),
  );
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
  // The whole table, so a typo of --severity is answered "did you mean" too; every --severity
  // was taken out above, so the parser never sees one.
  const parsed = parseFlags(WATCHER_FLAGS, severity.value.rest);
  if (!parsed.ok) return parsed;
  if (parsed.value.positionals.length > 0)
    return err(`unexpected argument ${JSON.stringify(parsed.value.positionals[0])}`);
  const values = new Map<string, FlagValue>();
  const given = new Set<string>(parsed.value.values.keys());
  if (severity.value.values.length > 0) given.add("severity");
  const read = new SettingReader(WATCHER_FLAGS, parsed.value.values);
  for (const flag of WATCHER_FLAGS) {
    if (flag.kind === "repeatable") continue;
    const value = read.declared(flag.name);
    if (!value.ok) return value;
    if (value.value !== undefined) values.set(flag.name, value.value);
  }
  return ok({ values, given, severity: severity.value.values, help: parsed.value.help });
}
