/**
 * Specialist `.tmpl` files (reference 1.5): front matter, every key's default and rule, the output
 * schema's structural checks, each refusal with its exact message.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { loadSpecialistFile, parseSpecialistFile } from "../../../../src/svc/workload/specialist-file.ts";
import { makeTree, removeTrees, template } from "./temporary-tree.ts";

afterEach(removeTrees);

const FILE = "/bundle/specialists/triage.tmpl";

function parsed(source: string, file = FILE) {
  const result = parseSpecialistFile(source, file);
  if (!result.ok) throw new Error(result.error);
  return result.value;
}

function refusal(source: string, file = FILE): string {
  const result = parseSpecialistFile(source, file);
  if (result.ok) throw new Error("expected a refusal");
  return result.error;
}

describe("front matter and defaults", () => {
  test("only a description: name from the file, Task, read_only, inherit MCP, trimmed body", () => {
    expect(parsed("---\ndescription: Triage.\n---\n\n  Look at it.\n\n")).toEqual({
      name: "triage",
      description: "Triage.",
      mode: "Task",
      capability: "read_only",
      budget: {},
      tools: { mcp: "inherit", builtin: [] },
      instruction: "Look at it.",
      file: FILE,
    });
  });

  test("leading whitespace before the opening line is allowed, CRLF too", () => {
    expect(parsed("\n  \n---\r\ndescription: d\r\n---\r\nbody\r\n").instruction).toBe("body");
  });

  test("every key is read", () => {
    const specialist = parsed(
      template(`name: judge
description: Judges.
mode: SingleTurn
capability: change_executor
model: gpt-test
budget: {max_turns: 3, max_cost_usd: 0.25, max_wallclock_seconds: 30}
tools:
  mcp:
    - server: kube
      tools: [get_pods]
    - server: logs
  builtin: [read_file]
  skills: []`),
    );
    expect(specialist).toMatchObject({
      name: "judge",
      mode: "SingleTurn",
      capability: "change_executor",
      model: "gpt-test",
      budget: { maxTurns: 3, maxCostUsd: 0.25, maxWallclockSeconds: 30 },
      tools: { mcp: [{ server: "kube", tools: ["get_pods"] }, { server: "logs" }], builtin: ["read_file"] },
    });
  });

  test("tools.mcp: [] is none, absent is inherit, a tier alone is kept", () => {
    expect(parsed(template("description: d\ntools: {mcp: []}")).tools.mcp).toEqual([]);
    expect(parsed(template("description: d\ntools: {builtin: [x]}")).tools.mcp).toBe("inherit");
    expect(parsed(template("description: d\ntier: frontier")).tier).toBe("frontier");
  });
});

describe("refusals", () => {
  const cases: [string, string, string][] = [
    ["no front matter", "description: d\n", `${FILE}: front matter missing: the file must start with a line ---`],
    [
      "an unclosed front matter",
      "---\ndescription: d\nbody\n",
      `${FILE}: front matter not closed: no line --- after it`,
    ],
    ["a missing description", template("mode: Task"), `${FILE}: description: required`],
    [
      "an empty description",
      template('description: "  "'),
      `${FILE}: description: expected a non-empty string, got "  "`,
    ],
    [
      "a lower-case mode",
      template("description: d\nmode: task"),
      `${FILE}: mode: expected one of Task, SingleTurn, got "task"`,
    ],
    [
      "an unknown capability",
      template("description: d\ncapability: admin"),
      `${FILE}: capability: expected one of read_only, change_executor, got "admin"`,
    ],
    [
      "an unknown tier",
      template("description: d\ntier: huge"),
      `${FILE}: tier: expected one of small, mid, frontier, got "huge"`,
    ],
    [
      "model and tier together",
      template("description: d\nmodel: m\ntier: small"),
      `${FILE}: tier: not allowed together with model: declare one of the two`,
    ],
    [
      "a fractional budget",
      template("description: d\nbudget: {max_turns: 2.5}"),
      `${FILE}: budget.max_turns: expected a non-negative integer, got 2.5`,
    ],
    [
      "a negative cost",
      template("description: d\nbudget: {max_cost_usd: -1}"),
      `${FILE}: budget.max_cost_usd: expected a non-negative number, got -1`,
    ],
    [
      "skills",
      template("description: d\ntools: {skills: [triage]}"),
      `${FILE}: tools.skills: expected [] (skills are not supported in a specialist), got a list`,
    ],
    [
      "an mcp grant without server",
      template("description: d\ntools: {mcp: [{tools: [a]}]}"),
      `${FILE}: tools.mcp[0].server: required`,
    ],
    [
      "an mcp mapping instead of a list",
      template("description: d\ntools: {mcp: {server: a}}"),
      `${FILE}: tools.mcp: expected a list, got a mapping`,
    ],
    [
      "a name that is not a tool name",
      template("description: d\nname: two words"),
      `${FILE}: name: expected 1-64 letters, digits, _ or -, got "two words"`,
    ],
    [
      "a file name that is not a tool name",
      template("description: d"),
      `/b/my agent.tmpl: name: expected 1-64 letters, digits, _ or -, got "my agent" (from the file name)`,
    ],
  ];
  for (const [what, source, message] of cases)
    test(`${what} is refused`, () =>
      expect(refusal(source, what.startsWith("a file name") ? "/b/my agent.tmpl" : FILE)).toBe(message));

  test("a closing line that is not alone does not close the front matter", () => {
    expect(refusal("---\ndescription: d\n--- body\n")).toBe(`${FILE}: front matter not closed: no line --- after it`);
  });

  test("an unreadable file names the file", () => {
    const result = loadSpecialistFile("/nonexistent/x.tmpl");
    expect(result).toEqual({ ok: false, error: "/nonexistent/x.tmpl: cannot read (no such file)" });
  });
});

describe("output_schema", () => {
  function withSchema(schema: string, name = "schemas/out.json", reference = "../schemas/out.json") {
    const root = makeTree({
      [name]: schema,
      "specialists/judge.tmpl": template(`description: d\noutput_schema: ${reference}`),
    });
    return { root, result: loadSpecialistFile(join(root, "specialists/judge.tmpl")) };
  }

  function schemaRefusal(schema: object | string, name?: string, reference?: string): string {
    const { root, result } = withSchema(typeof schema === "string" ? schema : JSON.stringify(schema), name, reference);
    if (result.ok) throw new Error("expected a refusal");
    return result.error.replaceAll(root, "<root>");
  }

  const PREFIX = "<root>/specialists/judge.tmpl: output_schema: <root>/schemas/out.json";

  test("a path relative to the .tmpl's directory is loaded, JSON or YAML", () => {
    const json = withSchema('{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}');
    expect(json.result.ok && json.result.value.outputSchema).toEqual({
      path: join(json.root, "schemas/out.json"),
      schema: { type: "object", properties: { a: { type: "string" } }, required: ["a"] },
    });
    const yaml = withSchema("type: object\nproperties:\n  a: {type: integer}\n", "out.yaml", "../out.yaml");
    expect(yaml.result.ok && yaml.result.value.outputSchema?.schema).toEqual({
      type: "object",
      properties: { a: { type: "integer" } },
    });
  });

  test("a missing file names it", () => {
    expect(schemaRefusal("{}", "schemas/other.json")).toBe(`${PREFIX}: cannot read (no such file)`);
  });

  test("another extension is refused", () => {
    expect(schemaRefusal("{}", "schemas/out.txt", "../schemas/out.txt")).toBe(
      "<root>/specialists/judge.tmpl: output_schema: <root>/schemas/out.txt: expected a .json, .yaml or .yml file",
    );
  });

  test("the top level must be an object schema", () => {
    expect(schemaRefusal({ type: "array", items: { type: "string" } })).toBe(
      `${PREFIX}: (top level): expected an object schema (type: object), got type "array"`,
    );
    expect(schemaRefusal("[1]")).toBe(`${PREFIX}: (top level): expected an object schema, got a list`);
  });

  test("an unknown key, a node with no type, an array with no items, an object with no properties", () => {
    expect(
      schemaRefusal({
        type: "object",
        properties: {
          a: { type: "string", pattern: "x", $ref: "#/x" },
          b: { description: "no type" },
          c: { type: "array" },
          d: { type: "object" },
          e: { type: "list" },
          f: { type: "array", items: { type: "object", properties: { g: {} } } },
        },
      }).split("\n"),
    ).toEqual([
      `${PREFIX}: properties.a.$ref: unknown schema key`,
      `${PREFIX}: properties.b: a schema node needs a "type"`,
      `${PREFIX}: properties.c: an array needs "items"`,
      `${PREFIX}: properties.d: an object needs "properties"`,
      `${PREFIX}: properties.e.type: expected one of string, number, integer, boolean, array, object, null, got "list"`,
      `${PREFIX}: properties.f.items.properties.g: a schema node needs a "type"`,
    ]);
  });

  test("a required entry that is not declared", () => {
    expect(schemaRefusal({ type: "object", properties: { a: { type: "string" } }, required: ["a", "b"] })).toBe(
      `${PREFIX}: required: "b" is not a declared property`,
    );
  });

  test("invalid JSON names the file", () => {
    expect(schemaRefusal("{nope")).toStartWith(`${PREFIX}: not valid JSON (`);
  });
});
