/**
 * The AGENTS.md chain: candidates in order (user, project, project .agents, directories from the
 * root down), the project root found from `.git`, missing files skipped, one file reached twice
 * counted once, the caps; the system prompt's shape; the reload registry's counts and errors.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { AgentKnowledge } from "../../../src/memory/agent-knowledge.ts";
import {
  MAX_MEMORY_FILE_BYTES,
  findProjectRoot,
  memoryCandidates,
  readMemory,
} from "../../../src/memory/memory-chain.ts";
import { ReloadRegistry } from "../../../src/memory/reload-registry.ts";
import { buildSystemPrompt } from "../../../src/memory/system-prompt.ts";
import { tempDir } from "../../support/daemon.ts";

function put(path: string, text: string): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  return path;
}

function tree() {
  const base = tempDir("spar-memory-");
  const root = join(base, "repo");
  const working = join(root, "svc", "api");
  mkdirSync(join(root, ".git"), { recursive: true });
  mkdirSync(working, { recursive: true });
  const user = put(join(base, "home", ".agents", "AGENTS.md"), "user rules");
  return { base, root, working, user };
}

describe("memory chain", () => {
  test("the project root is the nearest ancestor holding .git, else the directory itself", () => {
    const { root, working, base } = tree();
    expect(findProjectRoot(working)).toBe(root);
    expect(findProjectRoot(join(base, "home"))).toBe(join(base, "home"));
  });

  test("candidates: user, project AGENTS.md, project .agents/AGENTS.md, then each directory from the root down to the working directory", () => {
    const { root, working, user } = tree();
    expect(memoryCandidates({ userFile: user, workingDir: working })).toEqual([
      { scope: "user", path: user },
      { scope: "project", path: join(root, "AGENTS.md") },
      { scope: "project", path: join(root, ".agents", "AGENTS.md") },
      { scope: "directory", path: join(root, "svc", "AGENTS.md") },
      { scope: "directory", path: join(root, "svc", "api", "AGENTS.md") },
    ]);
    expect(memoryCandidates({ workingDir: root }).map((candidate) => candidate.scope)).toEqual(["project", "project"]);
  });

  test("readMemory: existing files only, in chain order, sizes on disk; the same file twice counts once; an oversized file is cut and reported", () => {
    const { root, working, user } = tree();
    put(join(root, "AGENTS.md"), "project rules");
    put(join(root, "svc", "api", "AGENTS.md"), "x".repeat(MAX_MEMORY_FILE_BYTES + 10));
    symlinkSync(user, join(root, "svc", "AGENTS.md"));
    const load = readMemory({ userFile: user, workingDir: working });
    expect(load.sources.map((source) => [source.scope, source.path, source.bytes])).toEqual([
      ["user", user, 10],
      ["project", join(root, "AGENTS.md"), 13],
      ["directory", join(root, "svc", "api", "AGENTS.md"), MAX_MEMORY_FILE_BYTES + 10],
    ]);
    expect(load.sources[2]?.text.length).toBe(MAX_MEMORY_FILE_BYTES);
    expect(load.errors).toEqual([
      `${join(root, "svc", "api", "AGENTS.md")}: ${MAX_MEMORY_FILE_BYTES + 10} bytes, only the first ${MAX_MEMORY_FILE_BYTES} are used (caps: ${MAX_MEMORY_FILE_BYTES} per file, ${4 * MAX_MEMORY_FILE_BYTES} in all)`,
    ]);
  });

  test("a directory named AGENTS.md is an error, not a crash", () => {
    const { root, working } = tree();
    mkdirSync(join(root, "AGENTS.md"));
    expect(readMemory({ workingDir: working }).errors).toEqual([`${join(root, "AGENTS.md")}: not a file`]);
  });
});

describe("system prompt", () => {
  test("description, then memory broadest first with the precedence rule, then the skills index; blank memory left out", () => {
    const prompt = buildSystemPrompt({
      description: "You triage incidents.",
      memory: [
        { scope: "user", path: "/h/AGENTS.md", text: "be brief\n" },
        { scope: "project", path: "/p/AGENTS.md", text: "  \n" },
        { scope: "directory", path: "/p/d/AGENTS.md", text: "be verbose" },
      ],
      skills: [{ name: "k8s-triage", description: "triage" }],
    });
    expect(prompt).toBe(
      [
        "You triage incidents.",
        "",
        "# Instructions from AGENTS.md files",
        "They are listed from the broadest scope (user) to the most specific (project, then directories). Where two disagree, follow the later one.",
        "",
        "## user: /h/AGENTS.md",
        "",
        "be brief",
        "",
        "## directory: /p/d/AGENTS.md",
        "",
        "be verbose",
        "",
        "# Skills",
        "These skill bundles are available. When a task matches one, call load_skill with its name to read its instructions, and load_skill_resource to read a file it lists.",
        "",
        "- k8s-triage: triage",
      ].join("\n"),
    );
  });

  test("nothing to say: no system prompt", () => {
    expect(buildSystemPrompt({ memory: [], skills: [] })).toBeUndefined();
  });

  test("AgentKnowledge rebuilds the prompt on reload", () => {
    const { root, working } = tree();
    const knowledge = new AgentKnowledge({
      memory: { workingDir: working },
      skillsDir: join(root, ".agents", "skills"),
    });
    expect(knowledge.load()).toEqual([]);
    expect(knowledge.systemPrompt()).toBeUndefined();
    put(join(root, "AGENTS.md"), "new rule");
    expect(knowledge.systemPrompt()).toBeUndefined();
    expect(knowledge.reloadMemory()).toEqual({ count: 1, errors: [] });
    expect(knowledge.systemPrompt()).toContain("new rule");
  });
});

describe("reload registry", () => {
  test("counts per part, 0 for parts nobody registered, errors prefixed with their part; a throwing part is reported and the rest still run", async () => {
    const registry = new ReloadRegistry();
    const order: string[] = [];
    registry.register("memory", () => (order.push("memory"), { count: 2, errors: [] }));
    registry.register("skills", async () => (order.push("skills"), { count: 1, errors: ["/s/bad/SKILL.md: broken"] }));
    registry.register("extra", () => {
      throw new Error("boom");
    });
    expect(await registry.reloadAll()).toEqual({
      memory: 2,
      skills: 1,
      mcp: 0,
      errors: ["skills: /s/bad/SKILL.md: broken", "extra: reload failed: boom"],
    });
    registry.register("mcp", () => ({ count: 3, errors: [] }));
    expect((await registry.reloadAll()).mcp).toBe(3);
    expect(order).toEqual(["memory", "skills", "memory", "skills"]);
  });
});
