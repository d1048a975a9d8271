/** SKILL.md front matter: the accepted shape and one clear message per broken rule. */
import { describe, expect, test } from "bun:test";
import { parseSkillFile } from "../../../src/skills/skill-file.ts";

describe("parseSkillFile", () => {
  test("name and description from the front matter, the trimmed body as instructions, extra keys ignored, CRLF accepted", () => {
    const text =
      "---\r\nname: k8s-triage\r\ndescription: >\r\n  Handles a k8s-event inject\r\nlicense: MIT\r\n---\r\n\r\n# Steps\r\n1. plan\r\n";
    expect(parseSkillFile(text, "k8s-triage")).toEqual({
      ok: true,
      value: { name: "k8s-triage", description: "Handles a k8s-event inject", instructions: "# Steps\n1. plan" },
    });
  });

  test("an empty body is allowed", () => {
    expect(parseSkillFile("---\nname: a\ndescription: b\n---\n", "a")).toEqual({
      ok: true,
      value: { name: "a", description: "b", instructions: "" },
    });
  });

  const cases: Array<[string, string, string]> = [
    ["no front matter", "# just markdown\n", "front matter missing"],
    ["unclosed front matter", "---\nname: a\ndescription: b\n", "front matter not closed"],
    ["closing line not alone", "---\nname: a\ndescription: b\n---x\n", "front matter not closed"],
    ["invalid YAML", "---\nname: a\ndescription: b: c\n---\n", "front matter is not valid YAML"],
    ["a list, not a mapping", "---\n- a\n---\n", "must be a YAML mapping"],
    ["missing name", "---\ndescription: b\n---\n", 'field "name" is required'],
    [
      "name with capitals",
      "---\nname: Bad_Name\ndescription: b\n---\n",
      'field "name" "Bad_Name" must be 1-64 lowercase',
    ],
    [
      "name differs from the directory",
      "---\nname: other\ndescription: b\n---\n",
      'must equal the bundle\'s directory name "a"',
    ],
    ["missing description", "---\nname: a\n---\n", 'field "description" is required'],
    [
      "description not a string",
      "---\nname: a\ndescription: [1, 2]\n---\n",
      'field "description" is required (a string)',
    ],
    ["description too long", `---\nname: a\ndescription: ${"x".repeat(1025)}\n---\n`, "longer than 1024"],
  ];
  for (const [what, text, message] of cases) {
    test(`${what}: ${message}`, () => {
      const parsed = parseSkillFile(text, "a");
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.error).toContain(message);
    });
  }
});
