/**
 * A small table-driven flag parser: `--name=value`, `--name value`, boolean `--name` /
 * `--name=false`, `--help`, and the help text of a table. Unknown flags and bad values are errors
 * naming the flag; an unknown flag close to one of the table's (a typo, an unambiguous prefix)
 * names that one too ("did you mean", D337). Float and repeatable settings arrive as their text
 * (the setting reader converts them).
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
    if (!spec) return err(unknownFlag(name, specs));
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

/** `unknown flag --x (see --help)`, with the closest flag of the table when one is close (D337). */
export function unknownFlag(name: string, specs: readonly FlagSpec[]): string {
  const near = closestName(
    name,
    specs.map((spec) => spec.name),
  );
  return near === undefined
    ? `unknown flag --${name} (see --help)`
    : `unknown flag --${name} (did you mean --${near}? see --help)`;
}

/**
 * The one candidate `given` most likely meant: the only one it is the start of (an abbreviation),
 * else the nearest by edit distance (a swap of two neighbours counts one), at most one edit per
 * five characters typed (at least one). Ties, and a blank name, suggest nothing.
 */
export function closestName(given: string, candidates: readonly string[]): string | undefined {
  const typed = given.toLowerCase();
  if (typed === "") return undefined;
  const names = [...new Set(candidates)];
  const prefixed = names.filter((candidate) => candidate.toLowerCase().startsWith(typed));
  if (prefixed.length === 1) return prefixed[0];
  const limit = Math.max(1, Math.floor(typed.length / 5));
  let best: string[] = [];
  let bestDistance = limit + 1;
  for (const candidate of names) {
    const distance = editDistance(typed, candidate.toLowerCase());
    if (distance < bestDistance) [best, bestDistance] = [[candidate], distance];
    else if (distance === bestDistance) best.push(candidate);
  }
  return best.length === 1 ? best[0] : undefined;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number) => rows[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let distance = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        distance = Math.min(distance, at(i - 2, j - 2) + 1);
      (rows[i] as number[])[j] = distance;
    }
  }
  return at(a.length, b.length);
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
