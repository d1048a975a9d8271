/** The skills and memory flags: defaults, flags over config keys, `-`, and bad values named. */
import { expect, test } from "bun:test";
import { homedir } from "node:os";
import { AGENT_FLAGS } from "../../../src/cli/agent-flags.ts";
import { buildAgentConfig } from "../../../src/cli/agent-config.ts";
import { parseFlags } from "../../../src/config/flag-parser.ts";

function build(argv: string[], config: Record<string, unknown> = {}) {
  const flags = parseFlags(AGENT_FLAGS, argv);
  if (!flags.ok) throw new Error(flags.error);
  return buildAgentConfig(flags.value.values, new Map(Object.entries(config)), "/work/main", 2);
}

test("defaults: skills under .agents/skills of the working directory, the user file under HOME, the project root found later", () => {
  const built = build([]);
  expect(built.ok && built.value.knowledge).toEqual({
    skillsDir: "/work/main/.agents/skills",
    memory: { workingDir: "/work/main", userFile: `${homedir()}/.agents/AGENTS.md` },
  });
});

test("config keys set every path (relative to the working directory) and agent.description; flags win; - drops the user file", () => {
  const config = {
    "skills.dir": "kits",
    "memory.user_file": "/etc/agents.md",
    "memory.project_root": "..",
    "agent.description": " Helper. ",
  };
  const fromConfig = build([], config);
  expect(fromConfig.ok && fromConfig.value.knowledge).toEqual({
    skillsDir: "/work/main/kits",
    memory: { workingDir: "/work/main", userFile: "/etc/agents.md", projectRoot: "/work" },
    description: "Helper.",
  });
  const fromFlags = build(["--skills-dir=/s", "--memory-user-file=-", "--memory-project-root=."], config);
  expect(fromFlags.ok && fromFlags.value.knowledge).toEqual({
    skillsDir: "/s",
    memory: { workingDir: "/work/main", projectRoot: "/work/main" },
    description: "Helper.",
  });
});

test("a path that is not a string or is empty is an error naming where it came from", () => {
  expect(build([], { "skills.dir": 3 })).toEqual({ ok: false, error: "config key skills.dir must be a path" });
  expect(build(["--memory-project-root= "])).toEqual({ ok: false, error: "--memory-project-root must be a path" });
});
