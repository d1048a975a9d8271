/**
 * The system prompt every model call carries (D133): the agent's description (config
 * `agent.description`), the memory chain's files broadest first with the precedence rule, and
 * the index of loadable skills. Empty parts are left out; nothing at all gives `undefined` (no
 * system prompt). Pure.
 */
export interface PromptMemory {
  scope: string;
  path: string;
  text: string;
}

export interface PromptSkill {
  name: string;
  description: string;
}

export function buildSystemPrompt(parts: {
  description?: string;
  memory: readonly PromptMemory[];
  skills: readonly PromptSkill[];
}): string | undefined {
  const sections: string[] = [];
  const description = parts.description?.trim();
  if (description) sections.push(description);
  const memory = parts.memory.filter((source) => source.text.trim() !== "");
  if (memory.length > 0) {
    const lines = [
      "# Instructions from AGENTS.md files",
      "They are listed from the broadest scope (user) to the most specific (project, then directories). Where two disagree, follow the later one.",
    ];
    for (const source of memory) lines.push("", `## ${source.scope}: ${source.path}`, "", source.text.trim());
    sections.push(lines.join("\n"));
  }
  if (parts.skills.length > 0) {
    const lines = [
      "# Skills",
      "These skill bundles are available. When a task matches one, call load_skill with its name to read its instructions, and load_skill_resource to read a file it lists.",
      "",
      ...parts.skills.map((skill) => `- ${skill.name}: ${skill.description}`),
    ];
    sections.push(lines.join("\n"));
  }
  return sections.length > 0 ? sections.join("\n\n") : undefined;
}
