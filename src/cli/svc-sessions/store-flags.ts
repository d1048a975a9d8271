/**
 * What the read verbs (`list`, `show`, `export-decisions`) share: the store flags, `--output`, and
 * running a verb body against a read-only view of the store (opened, closed, a failure on stderr
 * as `spar svc sessions <verb>: <error>` with exit 1).
 */
import type { ParsedFlags } from "../../config/flag-parser.ts";
import type { FlagSpec } from "../../config/flag-spec.ts";
import type { StoreReader } from "../../core/store-reader.ts";
import { type StoreDriver, openStoreReader } from "./open-reader.ts";
import { type OperatorVerb, type VerbOutput, verbUsageError } from "./operator-verb.ts";

export const SESSION_DB_FLAG: FlagSpec = {
  name: "session-db",
  kind: "string",
  help: "the daemon's store: a sqlite file path, or a postgres:// URL with --session-db-driver=postgres (read-only, no lock taken)",
};

export const SESSION_DB_DRIVER_FLAG: FlagSpec = {
  name: "session-db-driver",
  kind: "string",
  help: "the store's driver",
  defaultValue: "sqlite",
  choices: ["sqlite", "postgres"],
};

export const OUTPUT_FLAG: FlagSpec = {
  name: "output",
  kind: "string",
  help: "table (for people) or json (for scripts)",
  defaultValue: "table",
  choices: ["table", "json"],
};

/** A string flag's value, or undefined when not given. */
export function stringFlag(flags: ParsedFlags, name: string): string | undefined {
  const value = flags.values.get(name);
  return typeof value === "string" ? value : undefined;
}

/** The flag's value checked against its choices (its default when not given); undefined when it is not one. */
export function choiceFlag(flags: ParsedFlags, spec: FlagSpec): string | undefined {
  const value = stringFlag(flags, spec.name) ?? spec.defaultValue;
  return value !== undefined && (spec.choices ?? []).includes(value) ? value : undefined;
}

export function choiceError(verb: OperatorVerb, output: VerbOutput, flags: ParsedFlags, spec: FlagSpec): number {
  return verbUsageError(
    verb,
    output,
    `--${spec.name} takes ${(spec.choices ?? []).join(", ")}, got ${JSON.stringify(stringFlag(flags, spec.name))}`,
  );
}

/**
 * Check the store flags, open the store read-only, run `body` on it and close it. Usage errors
 * exit 2 naming the flag; a store that cannot be read, or a body that throws, exits 1.
 */
export async function withStore(
  verb: OperatorVerb,
  flags: ParsedFlags,
  output: VerbOutput,
  body: (reader: StoreReader) => Promise<number>,
): Promise<number> {
  const location = stringFlag(flags, SESSION_DB_FLAG.name);
  if (location === undefined || location.trim() === "")
    return verbUsageError(verb, output, "--session-db is required (the daemon's store file, or its postgres:// URL)");
  const driver = choiceFlag(flags, SESSION_DB_DRIVER_FLAG);
  if (driver === undefined) return choiceError(verb, output, flags, SESSION_DB_DRIVER_FLAG);
  let reader: StoreReader;
  try {
    reader = await openStoreReader(location, driver as StoreDriver);
  } catch (error) {
    return runtimeError(verb, output, error);
  }
  try {
    return await body(reader);
  } catch (error) {
    return runtimeError(verb, output, error);
  } finally {
    await reader.close();
  }
}

/** A runtime failure: `spar svc <verb>: <message>` on stderr, exit 1. */
export function runtimeError(verb: OperatorVerb, output: VerbOutput, error: unknown): number {
  output.stderr(`spar svc ${verb.name}: ${error instanceof Error ? error.message : String(error)}\n`);
  return 1;
}

/** Render rows as a table: two spaces after each column's widest cell, the last column unpadded. */
export function textTable(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const row of rows)
    for (const [index, cell] of row.entries()) widths[index] = Math.max(widths[index] ?? 0, cell.length);
  return rows
    .map((row) =>
      row
        .map((cell, index) => (index === row.length - 1 ? cell : cell.padEnd((widths[index] ?? 0) + 2)))
        .join("")
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join("");
}
