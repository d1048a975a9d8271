/**
 * Argument checks the operator verbs share: exactly one positional, a required flag, and flags
 * that exclude each other. Each answers the usage error naming what was wrong (exit 2).
 */
import type { ParsedFlags } from "../../config/flag-parser.ts";
import { type Result, err, ok } from "../../core/result.ts";

export function onePositional(flags: ParsedFlags, name: string): Result<string> {
  const [first, ...rest] = flags.positionals;
  if (first === undefined || first === "") return err(`missing ${name}`);
  if (rest.length > 0) return err(`unexpected argument ${JSON.stringify(rest[0])}`);
  return ok(first);
}

export function noPositional(flags: ParsedFlags): Result<void> {
  const [first] = flags.positionals;
  return first === undefined ? ok(undefined) : err(`unexpected argument ${JSON.stringify(first)}`);
}

export function requiredString(flags: ParsedFlags, name: string, what: string): Result<string> {
  const value = flags.values.get(name);
  if (typeof value !== "string" || value === "") return err(`missing --${name} (${what})`);
  return ok(value);
}

/** At most one of the flags is given. */
export function exclusive(flags: ParsedFlags, names: readonly string[]): Result<void> {
  const given = names.filter((name) => flags.values.has(name));
  if (given.length <= 1) return ok(undefined);
  return err(`${given.map((name) => `--${name}`).join(" and ")} exclude each other`);
}

/** `--response` as JSON, or the usage error naming the flag. */
export function jsonFlag(flags: ParsedFlags, name: string): Result<unknown> {
  const text = flags.values.get(name);
  if (typeof text !== "string") return ok(undefined);
  try {
    return ok(JSON.parse(text));
  } catch (error) {
    return err(`--${name} is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
}
