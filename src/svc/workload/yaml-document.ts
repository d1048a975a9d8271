/**
 * Reading the YAML of bundles, front matter and a2a files: `Bun.YAML.parse`, the top level must be
 * a mapping, and null values in mappings are dropped (a key with no value means the same as an absent
 * key, as with yaml.v3 decoding into structs). Also the one way validation problems are worded:
 * `<file>: <dotted.path>: expected ..., got ...`. Pure apart from the parser.
 */
import type { BaseIssue } from "valibot";
import { type Result, err, ok } from "../../core/result.ts";

export type Mapping = Record<string, unknown>;

export const isMapping = (value: unknown): value is Mapping =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** A copy without null-valued mapping keys (list entries are kept, so `[a, ~]` is still refused). */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (!isMapping(value)) return value;
  const out: Mapping = {};
  for (const [key, item] of Object.entries(value))
    if (item !== null && item !== undefined) out[key] = withoutNulls(item);
  return out;
}

/** Parse `text` as a YAML mapping; an empty document is an empty mapping. */
export function parseYamlMapping(text: string, label: string): Result<Mapping> {
  let value: unknown;
  try {
    value = Bun.YAML.parse(text);
  } catch (error) {
    return err(`${label}: not valid YAML (${error instanceof Error ? error.message : String(error)})`);
  }
  if (value === null || value === undefined) return ok({});
  if (!isMapping(value)) return err(`${label}: (top level): expected a mapping, got ${describeValue(value)}`);
  return ok(withoutNulls(value) as Mapping);
}

/** How a wrong value is named in a message: strings and numbers as JSON, containers by kind. */
export function describeValue(value: unknown): string {
  if (Array.isArray(value)) return "a list";
  if (isMapping(value)) return "a mapping";
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** `tools[0].name`: keys joined by dots, list indexes in brackets. */
export function dottedPath(keys: readonly unknown[]): string {
  let path = "";
  for (const key of keys) {
    if (typeof key === "number") path += `[${key}]`;
    else path += path === "" ? String(key) : `.${String(key)}`;
  }
  return path === "" ? "(top level)" : path;
}

/** One valibot issue as `<label>: <path>: <message>, got <value>`; a missing key says `required`. */
export function formatIssue(label: string, issue: BaseIssue<unknown>, prefix: readonly unknown[] = []): string {
  const keys = [...prefix, ...(issue.path ?? []).map((item) => item.key)];
  const where = dottedPath(keys);
  if (issue.input === undefined) return `${label}: ${where}: required`;
  return `${label}: ${where}: ${issue.message}, got ${describeValue(issue.input)}`;
}

/** A problem found after schema validation, worded the same way. */
export function fieldError(label: string, path: string, message: string): string {
  return `${label}: ${path}: ${message}`;
}

/** `prefix` before every line of a multi-line error. */
export function prefixLines(prefix: string, message: string): string {
  return message
    .split("\n")
    .map((line) => `${prefix}${line}`)
    .join("\n");
}
