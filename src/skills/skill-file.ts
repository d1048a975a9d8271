/**
 * SKILL.md parsing (D130): a YAML front matter block between `---` lines, then the markdown body
 * (the skill's instructions). `name` (1-64 of lowercase letters, digits and single hyphens, equal
 * to the bundle's directory name) and `description` (1-1024 characters) are required; other keys
 * are tolerated and ignored. Every problem is a message naming the field. Pure: text in, result out.
 */
import { type Result, err, ok } from "../core/result.ts";

export interface SkillFile {
  name: string;
  description: string;
  /** The markdown after the front matter, trimmed. */
  instructions: string;
}

export const SKILL_NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const MAX_NAME = 64;
const MAX_DESCRIPTION = 1024;

/** Split `---\n<yaml>\n---\n<body>`; the front matter must open on the first line. */
function splitFrontMatter(text: string): Result<{ yaml: string; body: string }> {
  const normalized = text.replace(/^\uFEFF/, "").replace(/\r\n/g, "\n");
  if (!normalized.startsWith("---\n")) return err("front matter missing: the file must start with a line '---'");
  const end = normalized.indexOf("\n---", 3);
  if (end < 0) return err("front matter not closed: no second line '---'");
  const after = normalized.slice(end + 4);
  if (after !== "" && !after.startsWith("\n"))
    return err("front matter not closed: the closing '---' must be alone on its line");
  return ok({ yaml: normalized.slice(4, end), body: after.slice(1) });
}

function parseYaml(yaml: string): Result<Record<string, unknown>> {
  let value: unknown;
  try {
    value = Bun.YAML.parse(yaml);
  } catch (error) {
    return err(`front matter is not valid YAML: ${(error as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return err("front matter must be a YAML mapping with name and description");
  return ok(value as Record<string, unknown>);
}

/** Parse one SKILL.md; `directory` is the bundle's directory name, which `name` must equal. */
export function parseSkillFile(text: string, directory: string): Result<SkillFile> {
  const parts = splitFrontMatter(text);
  if (!parts.ok) return parts;
  const fields = parseYaml(parts.value.yaml);
  if (!fields.ok) return fields;
  const { name, description } = fields.value;
  if (typeof name !== "string" || name.trim() === "") return err('front matter field "name" is required (a string)');
  if (name.length > MAX_NAME || !SKILL_NAME.test(name))
    return err(
      `front matter field "name" ${JSON.stringify(name)} must be 1-${MAX_NAME} lowercase letters, digits and single hyphens`,
    );
  if (name !== directory)
    return err(
      `front matter field "name" ${JSON.stringify(name)} must equal the bundle's directory name ${JSON.stringify(directory)}`,
    );
  if (typeof description !== "string" || description.trim() === "")
    return err('front matter field "description" is required (a string)');
  if (description.length > MAX_DESCRIPTION)
    return err(`front matter field "description" is longer than ${MAX_DESCRIPTION} characters`);
  return ok({ name, description: description.trim(), instructions: parts.value.body.trim() });
}
