/**
 * The JSON Schema each builtin tool (and skill loader tool) is offered to the model with is derived
 * from its valibot input (D218): it equals the hand-written schema the tools declared before (types, ranges, required
 * fields, no extra fields, every description), and what the schema promises the validator holds.
 */
import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { SKILL_TOOL_SPECS } from "../../../src/skills/skill-tools.ts";
import { BUILTIN_TOOLS, builtinSpecs } from "../../../src/tools/builtin-tools.ts";
import { toolInputSchema } from "../../../src/tools/tool-input-schema.ts";

/** What the model received before the schemas were derived: the tools' hand-written inputSchema. */
const HAND_WRITTEN: Record<string, Record<string, unknown>> = {
  bash: {
    type: "object",
    properties: {
      command: { type: "string", description: "The command line, run by bash -c." },
      timeout_seconds: {
        type: "number",
        minimum: 0.1,
        maximum: 600,
        description: "Kill the command after this many seconds (default 120).",
      },
    },
    required: ["command"],
    additionalProperties: false,
  },
  read_file: {
    type: "object",
    properties: {
      path: { type: "string", description: "File path, relative to the workspace root (or absolute inside it)." },
      offset: { type: "integer", minimum: 1, description: "First line to return (1-based)." },
      limit: { type: "integer", minimum: 1, description: "Number of lines to return." },
    },
    required: ["path"],
    additionalProperties: false,
  },
  write_file: {
    type: "object",
    properties: {
      path: { type: "string", description: "File path, relative to the workspace root (or absolute inside it)." },
      content: { type: "string", description: "The file's complete new content." },
    },
    required: ["path", "content"],
    additionalProperties: false,
  },
  edit_file: {
    type: "object",
    properties: {
      path: { type: "string", description: "File path, relative to the workspace root (or absolute inside it)." },
      old_string: { type: "string", description: "Exact text to replace." },
      new_string: { type: "string", description: "Replacement text." },
      replace_all: { type: "boolean", description: "Replace every occurrence (default false)." },
    },
    required: ["path", "old_string", "new_string"],
    additionalProperties: false,
  },
  delete_file: {
    type: "object",
    properties: {
      path: { type: "string", description: "File path, relative to the workspace root (or absolute inside it)." },
    },
    required: ["path"],
    additionalProperties: false,
  },
  fetch_url: {
    type: "object",
    properties: { url: { type: "string", description: "Absolute http or https URL." } },
    required: ["url"],
    additionalProperties: false,
  },
};

/** The skill loader tools' hand-written schemas, before they were derived the same way. */
const SKILL_HAND_WRITTEN: Record<string, Record<string, unknown>> = {
  load_skill: {
    type: "object",
    properties: { name: { type: "string", description: "The skill's name, as listed in the system prompt." } },
    required: ["name"],
    additionalProperties: false,
  },
  load_skill_resource: {
    type: "object",
    properties: {
      skill_name: { type: "string", description: "The skill's name." },
      resource_path: { type: "string", description: "Path of the file inside the bundle, as load_skill lists it." },
    },
    required: ["skill_name", "resource_path"],
    additionalProperties: false,
  },
};

describe("the model's tool schemas", () => {
  test("every builtin's derived schema equals the hand-written one it replaces, descriptions included", () => {
    const specs = builtinSpecs(new Set());
    expect(specs.map((spec) => spec.name)).toEqual(Object.keys(HAND_WRITTEN));
    expect(Object.fromEntries(specs.map((spec) => [spec.name, spec.inputSchema]))).toEqual(HAND_WRITTEN);
  });

  test("the skill loader tools' derived schemas equal their hand-written ones", () => {
    expect(Object.fromEntries(SKILL_TOOL_SPECS.map((spec) => [spec.name, spec.inputSchema]))).toEqual(
      SKILL_HAND_WRITTEN,
    );
  });

  test("no dialect marker is sent, and every property carries a description", () => {
    for (const tool of BUILTIN_TOOLS) {
      const schema = toolInputSchema(tool.input) as { properties: Record<string, { description?: string }> };
      expect(Object.keys(schema)).not.toContain("$schema");
      for (const [name, property] of Object.entries(schema.properties))
        expect([tool.name, name, typeof property.description]).toEqual([tool.name, name, "string"]);
    }
  });

  test("a field added to a tool's valibot input reaches the model with its type, range and description", () => {
    const input = v.object({
      lines: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(9), v.description("How many."))),
      name: v.pipe(v.string(), v.minLength(1), v.description("Who.")),
    });
    expect(toolInputSchema(input)).toEqual({
      type: "object",
      properties: {
        lines: { type: "integer", minimum: 1, maximum: 9, description: "How many." },
        name: { type: "string", description: "Who." },
      },
      required: ["name"],
      additionalProperties: false,
    });
  });

  test("a construct the model's schema cannot express is refused, not silently dropped", () => {
    expect(() => toolInputSchema(v.object({ at: v.date() }))).toThrow();
  });
});
