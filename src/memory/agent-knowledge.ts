/**
 * What the agent knows before a turn starts: the AGENTS.md memory chain, the skill bundles and
 * the agent's description, folded into one system prompt (rebuilt on every load, so a turn reads
 * a cached string). Loaded at start; `reloadMemory()` and `reloadSkills()` are POST /reload's
 * memory and skills parts.
 */
import { SkillLibrary } from "../skills/skill-library.ts";
import { type MemoryLoad, type MemorySettings, readMemory } from "./memory-chain.ts";
import type { ReloadPart, ReloadRegistry } from "./reload-registry.ts";
import { buildSystemPrompt } from "./system-prompt.ts";

export interface KnowledgeSettings {
  memory: MemorySettings;
  skillsDir: string;
  /** Config `agent.description`; it also feeds the system prompt (docs/configuration.md#agent-card-file). */
  description?: string;
}

export class AgentKnowledge {
  readonly skills: SkillLibrary;
  readonly #settings: KnowledgeSettings;
  #memory: MemoryLoad = { sources: [], errors: [] };
  #prompt: string | undefined;

  constructor(settings: KnowledgeSettings) {
    this.#settings = settings;
    this.skills = new SkillLibrary(settings.skillsDir);
  }

  /** First load; answers every problem found (for the startup log). */
  load(): string[] {
    return [
      ...this.reloadMemory().errors.map((error) => `memory: ${error}`),
      ...this.reloadSkills().errors.map((error) => `skills: ${error}`),
    ];
  }

  reloadMemory(): ReloadPart {
    this.#memory = readMemory(this.#settings.memory);
    this.#rebuild();
    return { count: this.#memory.sources.length, errors: this.#memory.errors };
  }

  reloadSkills(): ReloadPart {
    const scan = this.skills.reload();
    this.#rebuild();
    return { count: scan.skills.length, errors: scan.errors };
  }

  /** Register the memory and skills parts of POST /reload. */
  registerReloads(registry: ReloadRegistry): void {
    registry.register("memory", () => this.reloadMemory());
    registry.register("skills", () => this.reloadSkills());
  }

  /** GET /memory rows. */
  memorySources(): Array<{ scope: string; path: string; bytes: number }> {
    return this.#memory.sources.map((source) => ({ scope: source.scope, path: source.path, bytes: source.bytes }));
  }

  /** GET /skills rows. */
  skillRows(): Array<{ name: string; description: string }> {
    return this.skills.skills.map((skill) => ({ name: skill.name, description: skill.description }));
  }

  /** The system prompt of every model call; undefined when there is nothing to say. */
  systemPrompt(): string | undefined {
    return this.#prompt;
  }

  #rebuild(): void {
    this.#prompt = buildSystemPrompt({
      ...(this.#settings.description === undefined ? {} : { description: this.#settings.description }),
      memory: this.#memory.sources,
      skills: this.skills.skills,
    });
  }
}
