/**
 * Scanning skill bundles from disk and the skill tools over them: sorted bundles with resources,
 * bad bundles as errors, a missing directory, resource paths held inside the bundle (`..`,
 * absolute, a symlink out), the size cap, and SkillAwareTools passing other tools through.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { ToolCall } from "../../../src/core/events.ts";
import type { ToolCatalog, ToolRunResult, ToolRunner } from "../../../src/core/tool-catalog.ts";
import { MAX_SKILL_FILE_BYTES, SkillLibrary, scanSkills } from "../../../src/skills/skill-library.ts";
import { SkillAwareTools, loadSkill, loadSkillResource } from "../../../src/skills/skill-tools.ts";
import { tempDir } from "../../support/daemon.ts";

function put(root: string, path: string, text: string): void {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), text);
}

const skill = (name: string, description = `does ${name}`) =>
  `---\nname: ${name}\ndescription: ${description}\n---\nbody of ${name}\n`;

function library(): { root: string; lib: SkillLibrary } {
  const root = tempDir("spar-skills-");
  put(root, "b-skill/SKILL.md", skill("b-skill"));
  put(root, "b-skill/references/one.md", "one");
  put(root, "b-skill/scripts/run.sh", "echo");
  put(root, "a-skill/SKILL.md", skill("a-skill"));
  put(root, "no-skill-file/README.md", "x");
  put(root, "mismatch/SKILL.md", skill("other"));
  put(root, "loose-file.md", "not a bundle");
  put(root, ".hidden/SKILL.md", skill("hidden"));
  const lib = new SkillLibrary(root);
  lib.reload();
  return { root, lib };
}

describe("scanSkills", () => {
  test("bundles sorted by name with their resources; bad bundles become errors naming the file; loose files and dot directories are skipped", () => {
    const { root, lib } = library();
    expect(lib.skills.map((entry) => [entry.name, entry.resources])).toEqual([
      ["a-skill", []],
      ["b-skill", ["references/one.md", "scripts/run.sh"]],
    ]);
    expect(lib.errors).toEqual([
      `${root}/mismatch/SKILL.md: front matter field "name" "other" must equal the bundle's directory name "mismatch"`,
      `${root}/no-skill-file/SKILL.md: no SKILL.md in the skill bundle`,
    ]);
  });

  test("a missing directory holds no skills and is no error; a file where the directory should be is one", () => {
    const root = tempDir("spar-skills-");
    expect(scanSkills(join(root, "absent"))).toEqual({ skills: [], errors: [] });
    put(root, "file", "x");
    expect(scanSkills(join(root, "file")).errors).toEqual([
      `${join(root, "file")}: the skills path is not a directory`,
    ]);
  });

  test("an oversized SKILL.md is refused", () => {
    const root = tempDir("spar-skills-");
    put(root, "big/SKILL.md", skill("big") + "x".repeat(MAX_SKILL_FILE_BYTES));
    expect(scanSkills(root).errors[0]).toContain(`larger than ${MAX_SKILL_FILE_BYTES} bytes`);
  });
});

describe("skill tools", () => {
  test("load_skill answers the instructions and resources; load_skill_resource reads a file by relative path", async () => {
    const { lib } = library();
    expect(loadSkill(lib, { name: "b-skill" })).toEqual({
      output: {
        name: "b-skill",
        description: "does b-skill",
        instructions: "body of b-skill",
        resources: ["references/one.md", "scripts/run.sh"],
      },
      isError: false,
    });
    expect(await loadSkillResource(lib, { skill_name: "b-skill", resource_path: "./references/one.md" })).toEqual({
      output: { skill_name: "b-skill", resource_path: "./references/one.md", content: "one", bytes: 3 },
      isError: false,
    });
  });

  test("paths that leave the bundle are refused: '..', absolute, a symlink pointing out; a directory is not a resource", async () => {
    const { root, lib } = library();
    const outside = join(tempDir("spar-outside-"), "secret.txt");
    writeFileSync(outside, "secret");
    symlinkSync(outside, join(root, "b-skill/link.md"));
    lib.reload();
    const error = async (resource_path: string) =>
      ((await loadSkillResource(lib, { skill_name: "b-skill", resource_path })).output.error as string) ?? "";
    expect(await error("../a-skill/SKILL.md")).toContain("without '..'");
    expect(await error(`${root}/a-skill/SKILL.md`)).toContain("must be relative");
    expect(await error("link.md")).toBe('resource path "link.md" leaves the skill bundle');
    expect(await error("references")).toBe('resource "references" is not a file');
  });

  test("SkillAwareTools: skill tools offered, listed as source skill and read-only only while skills exist; other calls pass through", async () => {
    const { lib } = library();
    const seen: string[] = [];
    const inner: ToolRunner & ToolCatalog = {
      has: (name) => name === "bash",
      classOf: (name) => (name === "bash" ? "shell" : undefined),
      run: async (call: ToolCall): Promise<ToolRunResult> => {
        seen.push(call.name);
        return { output: { ran: call.name }, isError: false };
      },
      specs: () => [{ name: "bash", description: "shell", inputSchema: {} }],
      list: () => [{ name: "bash", description: "shell", source: "builtin" }],
    };
    const tools = new SkillAwareTools(inner, lib);
    expect(tools.specs().map((spec) => spec.name)).toEqual(["bash", "load_skill", "load_skill_resource"]);
    expect(tools.list().map((row) => `${row.name}:${row.source}`)).toEqual([
      "bash:builtin",
      "load_skill:skill",
      "load_skill_resource:skill",
    ]);
    expect([tools.has("load_skill"), tools.classOf("load_skill_resource"), tools.classOf("bash")]).toEqual([
      true,
      "read-only",
      "shell",
    ]);
    const signal = new AbortController().signal;
    expect((await tools.run({ callId: "1", name: "load_skill", args: { name: "a-skill" } }, signal)).output.name).toBe(
      "a-skill",
    );
    expect((await tools.run({ callId: "2", name: "bash", args: {} }, signal)).output).toEqual({ ran: "bash" });
    expect(seen).toEqual(["bash"]);
    const empty = new SkillLibrary(tempDir("spar-skills-"));
    empty.reload();
    const none = new SkillAwareTools(inner, empty);
    expect([none.specs().length, none.list().length, none.has("load_skill")]).toEqual([1, 1, false]);
  });
});
