/**
 * A small table-driven flag parser: `--name=value`, `--name value`, boolean `--name` /
 * `--name=false`, `--help`, and the help text of a table. Unknown flags and bad values are errors
 * naming the flag. Float and repeatable settings arrive as their text (the setting reader
 * converts them).
 */
import { parseDuration } from "../core/duration.ts";
import { type Result, err, ok } from "../core/result.ts";
import { type FlagSpec, type FlagValue, shownDefault } from "./flag-spec.ts";

export interface ParsedFlags {
  values: Map<string, FlagValue>;
  positionals: string[];
  help: boolean;
}

function convert(spec: FlagSpec, raw: string): Result<FlagValue> {
  switch (spec.kind) {
    case "string":
    case "float":
    case "repeatable":
      return ok(raw);
    case "bool":
      if (raw === "true" || raw === "1") return ok(true);
      if (raw === "false" || raw === "0") return ok(false);
      return err(`--${spec.name} takes true or false, got ${JSON.stringify(raw)}`);
    case "int": {
      if (!/^-?\d+$/.test(raw)) return err(`--${spec.name} takes an integer, got ${JSON.stringify(raw)}`);
      return ok(Number.parseInt(raw, 10));
    }
    case "duration": {
      const parsed = parseDuration(raw);
      return parsed.ok ? ok(parsed.value) : err(`--${spec.name}: ${parsed.error}`);
    }
  }
}

export function parseFlags(specs: readonly FlagSpec[], argv: readonly string[]): Result<ParsedFlags> {
  const byName = new Map(specs.map((spec) => [spec.name, spec]));
  const values = new Map<string, FlagValue>();
  const positionals: string[] = [];
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    if (arg === "--help" || arg === "-h") {
      help = true;
      continue;
    }
    if (!arg.startsWith("--")) {
      positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = arg.slice(2, eq === -1 ? undefined : eq);
    const spec = byName.get(name);
    if (!spec) return err(`unknown flag --${name} (see --help)`);
    let raw: string | undefined = eq === -1 ? undefined : arg.slice(eq + 1);
    if (raw === undefined) {
      if (spec.kind === "bool") raw = "true";
      else {
        raw = argv[++i];
        if (raw === undefined) return err(`--${name} needs a value`);
      }
    }
    const value = convert(spec, raw);
    if (!value.ok) return value;
    values.set(name, value.value);
  }
  return ok({ values, positionals, help });
}

export function renderHelp(usage: string, summary: string, specs: readonly FlagSpec[]): string {
  const lines = [`usage: ${usage}`, "", summary, "", "flags:"];
  for (const spec of specs) {
    const kind = spec.kind === "bool" ? "" : `=<${spec.kind}>`;
    const extra = [
      shownDefault(spec) ? `default ${shownDefault(spec)}` : "",
      spec.configKey ? `config ${spec.configKey}` : "",
    ]
      .filter(Boolean)
      .join("; ");
    lines.push(`  --${spec.name}${kind}`);
    lines.push(`      ${spec.help}${extra ? ` (${extra})` : ""}`);
  }
  lines.push("  --help", "      show this help");
  return `${lines.join("\n")}\n`;
}
