/**
 * The AGENTS.md memory chain in a real daemon: GET /memory lists the files broadest first (user,
 * project, project .agents, directories down to the working directory) with their sizes;
 * `--memory-user-file=-` drops the user scope; the system prompt built from them (and the skills
 * index and `agent.description`) reaches a real provider's wire (the OpenAI-compatible fake),
 * and after an edit plus POST /reload the next turn carries the new text.
 */
import { expect, test } from "bun:test";
import { daemonScope } from "../../support/daemon-scope.ts";
import { join } from "node:path";
import { postJson } from "../../support/daemon.ts";
import { type Collector, collect } from "../../support/sse-client.ts";
import { startProviderFake } from "../../fakes/providers/provider-fake.ts";
import { type Project, makeProject, skillFile } from "./skills-project.ts";

const scope = daemonScope();

function layeredProject(): Project {
  const project = makeProject();
  project.putHome(".agents/AGENTS.md", "USER: answer in English.\n");
  project.put("AGENTS.md", "PROJECT: run tests with scripts/test.\n");
  project.put(".agents/AGENTS.md", "AGENTS-DIR: plans go to .agents/plans.\n");
  project.put("svc/AGENTS.md", "SVC: services use port 0 in tests.\n");
  project.put("svc/api/AGENTS.md", "API: answer in French.\n");
  project.put("other/AGENTS.md", "OTHER: not on the chain.\n");
  return project;
}

test("GET /memory: user, project, project .agents, then each directory down to the working directory, with sizes; a sibling directory is not on the chain", async () => {
  const project = layeredProject();
  const working = join(project.root, "svc", "api");
  const daemon = await scope.start({ cwd: working, env: { HOME: project.home } });
  const body = await (await fetch(`${daemon.baseUrl}/sessions/default/memory`)).json();
  expect(body).toEqual({
    sources: [
      { scope: "user", path: join(project.home, ".agents", "AGENTS.md"), bytes: 25 },
      { scope: "project", path: join(project.root, "AGENTS.md"), bytes: 38 },
      { scope: "project", path: join(project.root, ".agents", "AGENTS.md"), bytes: 39 },
      { scope: "directory", path: join(project.root, "svc", "AGENTS.md"), bytes: 35 },
      { scope: "directory", path: join(project.root, "svc", "api", "AGENTS.md"), bytes: 23 },
    ],
  });
}, 20_000);

test("--memory-user-file=- drops the user scope; --memory-project-root moves the project scope", async () => {
  const project = layeredProject();
  const daemon = await scope.start({
    cwd: join(project.root, "svc", "api"),
    env: { HOME: project.home },
    args: ["--memory-user-file=-", `--memory-project-root=${join(project.root, "svc")}`],
  });
  const body = (await (await fetch(`${daemon.baseUrl}/sessions/default/memory`)).json()) as {
    sources: Array<{ scope: string; path: string }>;
  };
  expect(body.sources.map((source) => [source.scope, source.path])).toEqual([
    ["project", join(project.root, "svc", "AGENTS.md")],
    ["directory", join(project.root, "svc", "api", "AGENTS.md")],
  ]);
}, 20_000);

async function runTurn(events: Collector, base: string): Promise<string> {
  const mark = events.frames.length;
  expect((await postJson(`${base}/inject`, { message: "hello" })).status).toBe(200);
  const end = await events.waitFor(
    (frame) => frame.event === "turn-complete" || frame.event === "turn-error",
    15_000,
    mark,
  );
  return end.event;
}

test("the system prompt reaches the provider: description, the chain in order (the more specific scope last, with the rule to follow it) and the skills index; an edit shows after POST /reload", async () => {
  const project = layeredProject();
  project.put(".agents/config.json", JSON.stringify({ agent: { description: "You are the build helper." } }));
  project.put(".agents/skills/release/SKILL.md", skillFile("release", "Cut a release", "steps"));
  const key = "memory-test-key-7d1e";
  const fake = scope.defer(
    startProviderFake("openai-compatible", { apiKey: key, models: ["qwen3-coder-30b"] }),
    (provider) => provider.stop(),
  );
  const daemon = await scope.start({
    cwd: join(project.root, "svc", "api"),
    env: { HOME: project.home, LOCAL_LLM_KEY: key },
    args: [
      "--provider=openai-compatible",
      "--model=qwen3-coder-30b",
      `--model-base-url=${fake.baseUrl}`,
      "--model-api-key-env=LOCAL_LLM_KEY",
      `--config=${join(project.root, ".agents", "config.json")}`,
      `--skills-dir=${join(project.root, ".agents", "skills")}`,
      "--workers=1",
    ],
  });
  const events = collect(`${daemon.baseUrl}/sessions/default/events`);
  scope.defer(events, (stream) => stream.close());
  await events.waitFor((frame) => frame.event === "usage-update");
  const base = `${daemon.baseUrl}/sessions/default`;
  fake.enqueue("text");
  expect(await runTurn(events, base)).toBe("turn-complete");
  const systemOf = (index: number) => {
    const messages = fake.requests[index]?.body.messages as Array<{ role: string; content: string }>;
    expect(messages[0]?.role).toBe("system");
    return messages[0]?.content ?? "";
  };
  const first = systemOf(0);
  expect(first.startsWith("You are the build helper.\n\n# Instructions from AGENTS.md files\n")).toBe(true);
  expect(first).toContain("Where two disagree, follow the later one.");
  const order = ["USER:", "PROJECT:", "AGENTS-DIR:", "SVC:", "API:"].map((marker) => first.indexOf(marker));
  expect(order.every((at) => at >= 0)).toBe(true);
  expect([...order].sort((a, b) => a - b)).toEqual(order);
  expect(first).not.toContain("OTHER:");
  expect(first).toContain(`## directory: ${join(project.root, "svc", "api", "AGENTS.md")}\n\nAPI: answer in French.`);
  expect(
    first.endsWith(
      "# Skills\nThese skill bundles are available. When a task matches one, call load_skill with its name to read its instructions, and load_skill_resource to read a file it lists.\n\n- release: Cut a release",
    ),
  ).toBe(true);

  project.put("svc/api/AGENTS.md", "API: answer in German.\n");
  const reload = await postJson(`${base}/reload`);
  expect(await reload.json()).toEqual({ memory: 5, skills: 1, mcp: 0, errors: [] });
  fake.enqueue("text");
  expect(await runTurn(events, base)).toBe("turn-complete");
  const second = systemOf(1);
  expect(second).toContain("API: answer in German.");
  expect(second).not.toContain("French");
}, 30_000);
