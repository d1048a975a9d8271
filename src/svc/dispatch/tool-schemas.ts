/**
 * Checking arguments against a tool's declared JSON Schema (an operator's edit: the edit checks of
 * docs/svc.md#the-write-gate) or a reply against a specialist's output_schema (bounded dispatch),
 * with Ajv; each schema compiled once. A schema Ajv cannot compile refuses every edit of that tool,
 * naming why.
 */
import Ajv, { type ValidateFunction } from "ajv";

export class ToolSchemas {
  readonly #ajv = new Ajv({ allErrors: false, strict: false });
  readonly #compiled = new WeakMap<object, ValidateFunction | string>();

  /** Why `args` break `schema` (named `dataVar` in the text); undefined when they satisfy it. */
  problem(schema: Record<string, unknown>, args: Record<string, unknown>, dataVar = "args"): string | undefined {
    let validate = this.#compiled.get(schema);
    if (validate === undefined) {
      try {
        validate = this.#ajv.compile(schema);
      } catch (error) {
        validate = `its input schema cannot be checked (${error instanceof Error ? error.message : String(error)})`;
      }
      this.#compiled.set(schema, validate);
    }
    if (typeof validate === "string") return validate;
    if (validate(args)) return undefined;
    return this.#ajv.errorsText(validate.errors, { dataVar });
  }
}
