/**
 * Valibot building blocks shared by the bundle, specialist and a2a schemas, each carrying the
 * "expected ..." half of its error message (yaml-document.ts adds the file, the path and the value).
 */
import * as v from "valibot";
import { parseDuration } from "../../core/duration.ts";

export const text = v.string("expected a string");

export const nonEmptyText = v.pipe(
  v.string("expected a non-empty string"),
  v.check((value) => value.trim() !== "", "expected a non-empty string"),
);

export const flag = v.boolean("expected true or false");

export const count = v.pipe(
  v.number("expected a non-negative integer"),
  v.integer("expected a non-negative integer"),
  v.minValue(0, "expected a non-negative integer"),
);

export const integer = v.pipe(v.number("expected an integer"), v.integer("expected an integer"));

export const amount = v.pipe(
  v.number("expected a non-negative number"),
  v.check((value) => Number.isFinite(value) && value >= 0, "expected a non-negative number"),
);

export function oneOf<const Options extends readonly string[]>(options: Options) {
  return v.picklist(options, `expected one of ${options.join(", ")}`);
}

/** Not a list: valibot's object and record schemas take an array for an object. */
const notList = v.custom<Record<string, unknown>>(
  (value) => typeof value === "object" && value !== null && !Array.isArray(value),
  "expected a mapping",
);

export function mapping<const Entries extends v.ObjectEntries>(entries: Entries) {
  return v.pipe(notList, v.object(entries, "expected a mapping"));
}

export function listOf<const Item extends v.GenericSchema>(item: Item) {
  return v.array(item, "expected a list");
}

export const anyMapping = v.pipe(notList, v.record(v.string(), v.unknown(), "expected a mapping"));

export const textList = listOf(nonEmptyText);

/** A Go duration string (`10m`, `1h30m`, `500ms`) to milliseconds. */
export const duration = v.pipe(
  v.string("expected a Go duration string such as 10m, 1h30m or 500ms"),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const parsed = parseDuration(dataset.value);
    if (!parsed.ok) {
      addIssue({ message: "expected a Go duration string such as 10m, 1h30m or 500ms" });
      return NEVER;
    }
    return parsed.value;
  }),
);

/** A mapping of string to non-empty string (precondition `args_from`). */
export const stringMapping = v.pipe(notList, v.record(v.string(), nonEmptyText, "expected a mapping"));
