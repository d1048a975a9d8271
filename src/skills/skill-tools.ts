/**
 * The skill loader tools (D131): `load_skill {name}` answers a bundle's instructions (the SKILL.md
 * body) and its resource list; `load_skill_resource {skill_name, resource_path}` answers one
 * resource file. Both are read-only and run on the main thread (bounded async file reads, no
 * child process), so they need nothing from the tool-host worker. `SkillAwareTools` puts them in
 * front of another runner and catalog (the tool host): offered and listed (`source: "skill"`)
 * only while at least one skill is loaded; every other call passes through unchanged.
 */
import * as v from "valibot";
import type { ToolSpec } from "../core/model.ts";
import type { ToolCatalog, ToolRunResult, ToolRunner } from "../core/tool-catalog.ts";
import { toolInputSchema } from "../tools/tool-input-schema.ts";
import { ToolsInFront } from "../tools/tools-in-front.ts";
import { MAX_SKILL_FILE_BYTES, type SkillLibrary, resolveResource } from "./skill-library.ts";

export const LOAD_SKILL = "load_skill";
export const LOAD_SKILL_RESOURCE = "load_skill_resource";

const LoadSkillInput = v.object({
  name: v.pipe(
    v.string(),
    v.minLength(1, "name must not be empty"),
    v.description("The skill's name, as listed in the system prompt."),
  ),
});
const LoadResourceInput = v.object({
  skill_name: v.pipe(v.string(), v.minLength(1, "skill_name must not be empty"), v.description("The skill's name.")),
  resource_path: v.pipe(
    v.string(),
    v.minLength(1, "resource_path must not be empty"),
    v.description("Path of the file inside the bundle, as load_skill lists it."),
  ),
});

/** The loader tools as the model is offered them; their JSON Schemas derive from the inputs above (D218). */
export const SKILL_TOOL_SPECS: readonly ToolSpec[] = [
  {
    name: LOAD_SKILL,
    description:
      "Load a skill bundle by name: returns its instructions (SKILL.md) and the resource files you can then read with load_skill_resource.",
    inputSchema: toolInputSchema(LoadSkillInput),
  },
  {
    name: LOAD_SKILL_RESOURCE,
    description:
      "Read one resource file of a skill bundle, by the skill's name and the file's path relative to the bundle (e.g. references/OOMKilled.md).",
    inputSchema: toolInputSchema(LoadResourceInput),
  },
];

const failure = (error: string): ToolRunResult => ({ output: { error }, isError: true });

function badInput(tool: string, issues: readonly v.BaseIssue<unknown>[]): ToolRunResult {
  return failure(
    `invalid arguments for ${tool}: ${issues.map((issue) => `${v.getDotPath(issue) ?? "input"}: ${issue.message}`).join("; ")}`,
  );
}

function unknownSkill(library: SkillLibrary, name: string): ToolRunResult {
  const names = library.skills.map((skill) => skill.name);
  return failure(`skill not found: ${JSON.stringify(name)} (loaded skills: ${names.join(", ") || "none"})`);
}

/** `load_skill`: the bundle's instructions and resource list. */
export function loadSkill(library: SkillLibrary, args: unknown): ToolRunResult {
  const input = v.safeParse(LoadSkillInput, args);
  if (!input.success) return badInput(LOAD_SKILL, input.issues);
  const skill = library.get(input.output.name);
  if (!skill) return unknownSkill(library, input.output.name);
  return {
    output: {
      name: skill.name,
      description: skill.description,
      instructions: skill.instructions,
      resources: skill.resources,
    },
    isError: false,
  };
}

/** `load_skill_resource`: one file of the bundle, as text. */
export async function loadSkillResource(library: SkillLibrary, args: unknown): Promise<ToolRunResult> {
  const input = v.safeParse(LoadResourceInput, args);
  if (!input.success) return badInput(LOAD_SKILL_RESOURCE, input.issues);
  const skill = library.get(input.output.skill_name);
  if (!skill) return unknownSkill(library, input.output.skill_name);
  const path = resolveResource(skill, input.output.resource_path);
  if (!path.ok) return failure(path.error);
  const file = Bun.file(path.value);
  let size: number;
  try {
    const stat = await file.stat();
    if (!stat.isFile()) return failure(`resource ${JSON.stringify(input.output.resource_path)} is not a file`);
    size = stat.size;
  } catch (error) {
    return failure(
      `resource ${JSON.stringify(input.output.resource_path)} cannot be read: ${(error as Error).message}`,
    );
  }
  if (size > MAX_SKILL_FILE_BYTES)
    return failure(
      `resource ${JSON.stringify(input.output.resource_path)} is larger than ${MAX_SKILL_FILE_BYTES} bytes`,
    );
  return {
    output: {
      skill_name: skill.name,
      resource_path: input.output.resource_path,
      content: await file.text(),
      bytes: size,
    },
    isError: false,
  };
}

/** The tool host's runner and catalog with the skill tools in front (read-only, while skills exist). */
export class SkillAwareTools extends ToolsInFront {
  constructor(inner: ToolRunner & ToolCatalog, library: SkillLibrary) {
    super(inner, {
      specs: () => (library.skills.length > 0 ? SKILL_TOOL_SPECS : []),
      toolClass: "read-only",
      source: "skill",
      run: (call) => (call.name === LOAD_SKILL ? loadSkill(library, call.args) : loadSkillResource(library, call.args)),
    });
  }
}
