/**
 * A specialist's `output_schema` file (docs/svc-workloads.md#output-schemas): `.json`, `.yaml` or
 * `.yml`, loaded at startup, checked structurally: the top level is an object schema; every node
 * has a known `type`; only known schema keys; an array has `items`; an object has `properties`;
 * every `required` entry is a declared property. The key set is the one of a provider response
 * schema (Gemini's `Schema`), so a provider can be handed it as one. Reads the one file it is
 * given.
 */
import { extname } from "node:path";
import { type Result, err, ok } from "../../core/result.ts";
import { readText } from "./read-text.ts";
import type { OutputSchema } from "./workload.ts";
import { type Mapping, describeValue, dottedPath, isMapping, parseYamlMapping } from "./yaml-document.ts";

const TYPES = new Set(["string", "number", "integer", "boolean", "array", "object", "null"]);
const KEYS = new Set([
  "type",
  "format",
  "title",
  "description",
  "nullable",
  "enum",
  "items",
  "minItems",
  "maxItems",
  "properties",
  "required",
  "minProperties",
  "maxProperties",
  "minLength",
  "maxLength",
  "pattern",
  "example",
  "anyOf",
  "propertyOrdering",
  "default",
  "minimum",
  "maximum",
]);

/** Problems of one schema node and its children, as "<path>: <message>". */
function nodeProblems(node: unknown, path: (string | number)[]): string[] {
  const where = dottedPath(path);
  if (!isMapping(node)) return [`${where}: expected a schema mapping, got ${describeValue(node)}`];
  const problems = Object.keys(node)
    .filter((key) => !KEYS.has(key))
    .map((key) => `${dottedPath([...path, key])}: unknown schema key`);
  const type = node.type;
  if (type === undefined) return [...problems, `${where}: a schema node needs a "type"`];
  if (typeof type !== "string" || !TYPES.has(type))
    return [
      ...problems,
      `${dottedPath([...path, "type"])}: expected one of ${[...TYPES].join(", ")}, got ${describeValue(type)}`,
    ];
  if (type === "array") {
    if (node.items === undefined) problems.push(`${where}: an array needs "items"`);
    else problems.push(...nodeProblems(node.items, [...path, "items"]));
  }
  if (type === "object") problems.push(...objectProblems(node, path));
  if (Array.isArray(node.anyOf))
    node.anyOf.forEach((child, index) => {
      problems.push(...nodeProblems(child, [...path, "anyOf", index]));
    });
  return problems;
}

function objectProblems(node: Mapping, path: (string | number)[]): string[] {
  const where = dottedPath(path);
  if (!isMapping(node.properties)) return [`${where}: an object needs "properties"`];
  const problems: string[] = [];
  for (const [name, child] of Object.entries(node.properties))
    problems.push(...nodeProblems(child, [...path, "properties", name]));
  const required = node.required ?? [];
  if (!Array.isArray(required))
    return [...problems, `${dottedPath([...path, "required"])}: expected a list of property names`];
  for (const name of required)
    if (typeof name !== "string" || !(name in node.properties))
      problems.push(`${dottedPath([...path, "required"])}: ${describeValue(name)} is not a declared property`);
  return problems;
}

function parseSchemaText(source: string, path: string): Result<Mapping> {
  const extension = extname(path).toLowerCase();
  if (extension === ".yaml" || extension === ".yml") return parseYamlMapping(source, path);
  if (extension !== ".json") return err(`${path}: expected a .json, .yaml or .yml file`);
  try {
    const value: unknown = JSON.parse(source);
    if (!isMapping(value)) return err(`${path}: (top level): expected an object schema, got ${describeValue(value)}`);
    return ok(value);
  } catch (error) {
    return err(`${path}: not valid JSON (${error instanceof Error ? error.message : String(error)})`);
  }
}

/** Load and check the schema at `path` (absolute). Errors name the file and the schema path. */
export function loadOutputSchema(path: string): Result<OutputSchema> {
  const read = readText(path);
  if (!read.ok) return read;
  const source = read.value;
  const schema = parseSchemaText(source, path);
  if (!schema.ok) return schema;
  if (schema.value.type !== "object")
    return err(
      `${path}: (top level): expected an object schema (type: object), got type ${describeValue(schema.value.type)}`,
    );
  const problems = nodeProblems(schema.value, []);
  if (problems.length > 0) return err(problems.map((problem) => `${path}: ${problem}`).join("\n"));
  return ok({ path, schema: schema.value });
}
