/**
 * The JSON Schema a builtin tool's input is offered to the model with, derived from the valibot
 * schema that validates it (D218), so the two never drift. Length bounds and custom checks stay
 * with the validator (its message tells the model what was wrong); the model sees the types,
 * ranges, required fields and descriptions (`v.description`), and is asked for no other field (a
 * validated input drops unknown ones anyway). Anything else the converter cannot express throws.
 */
import { toJsonSchema } from "@valibot/to-json-schema";
import type * as v from "valibot";

/** Validation-only actions: not part of the schema the model is shown. */
const VALIDATOR_ONLY_ACTIONS = ["min_length", "max_length", "check"];

export function toolInputSchema(input: v.GenericSchema): Record<string, unknown> {
  const { $schema: _dialect, ...schema } = toJsonSchema(input, {
    target: "draft-2020-12",
    errorMode: "throw",
    ignoreActions: VALIDATOR_ONLY_ACTIONS,
  });
  return { ...schema, additionalProperties: false };
}
