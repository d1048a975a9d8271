/**
 * Flags and config keys of skills and memory (D130, D132): where the skill bundles live, the
 * user-scope AGENTS.md (`-` turns it off) and the project root of the memory chain. Relative
 * paths are taken from the daemon's working directory; flags win over the config file. The
 * config key `agent.description` also feeds the system prompt. Owns no loading (src/skills/,
 * src/memory/).
 */
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { type Result, err, ok } from "../core/result.ts";
import type { KnowledgeSettings } from "../memory/agent-knowledge.ts";
import type { FlagSpec, FlagValue } from "../config/flag-spec.ts";
import { SettingReader } from "../config/setting-reader.ts";

export const KNOWLEDGE_FLAGS: readonly FlagSpec[] = [
  {
    name: "skills-dir",
    kind: "string",
    help: "directory of skill bundles (<name>/SKILL.md plus resource files); a missing directory holds none",
    defaultText: ".agents/skills",
    configKey: "skills.dir",
  },
  {
    name: "memory-user-file",
    kind: "string",
    help: "user-scope AGENTS.md, first in the memory chain; - skips it",
    defaultText: "~/.agents/AGENTS.md",
    configKey: "memory.user_file",
  },
  {
    name: "memory-project-root",
    kind: "string",
    help: "project root of the memory chain (its AGENTS.md and .agents/AGENTS.md; directory AGENTS.md files below it down to the working directory)",
    defaultText: "nearest ancestor of the working directory holding .git, else the working directory",
    configKey: "memory.project_root",
  },
];

function pathSetting(read: SettingReader, name: string): Result<string | undefined> {
  const found = read.setting(name);
  if (found === undefined) return ok(undefined);
  if (typeof found.value !== "string" || found.value.trim() === "") return err(`${found.from} must be a path`);
  return ok(found.value.trim());
}

export function resolveKnowledgeSettings(
  flags: ReadonlyMap<string, FlagValue>,
  config: ReadonlyMap<string, unknown>,
  cwd: string,
): Result<KnowledgeSettings> {
  const read = new SettingReader(KNOWLEDGE_FLAGS, flags, config);
  const skills = pathSetting(read, "skills-dir");
  if (!skills.ok) return skills;
  const user = pathSetting(read, "memory-user-file");
  if (!user.ok) return user;
  const root = pathSetting(read, "memory-project-root");
  if (!root.ok) return root;
  const description = config.get("agent.description");
  const userFile = user.value === "-" ? undefined : resolve(cwd, user.value ?? join(homedir(), ".agents", "AGENTS.md"));
  return ok({
    skillsDir: resolve(cwd, skills.value ?? join(".agents", "skills")),
    memory: {
      workingDir: cwd,
      ...(userFile === undefined ? {} : { userFile }),
      ...(root.value === undefined ? {} : { projectRoot: resolve(cwd, root.value) }),
    },
    ...(typeof description === "string" && description.trim() !== "" ? { description: description.trim() } : {}),
  });
}
