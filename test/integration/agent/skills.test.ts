/**
 * Skill bundles in a real daemon: GET /skills and the skill tools on GET /tools, the agent
 * card's bundle skills, a scripted turn that loads a skill and one of its resources by name
 * (yolo), the errors the model reads for an unknown skill, a missing resource and a path that
 * leaves the bundle, and a bad SKILL.md that is left out without stopping the daemon.
 */
import { expect, test } from "bun:test";
import { daemonScope } from "../../support/daemon-scope.ts";
import { postJson } from "../../support/daemon.ts";
import { call, toolResults, writeScript } from "../../support/scripted.ts";
import { collect } from "../../support/sse-client.ts";
import { type Project, makeProject, skillFile } from "./skills-project.ts";

const scope = daemonScope();

const say = (text: string) => ({
  request: {},
  responses: [{ content: { role: "model", parts: [{ text }] }, turnComplete: true }],
});

function triageProject(): Project {
  const project = makeProject();
  project.put(
    ".agents/skills/k8s-triage/SKILL.md",
    skillFile("k8s-triage", "Triage a Kubernetes incident inject", "# Router\nStep 1: load references/<reason>.md."),
  );
  project.put(".agents/skills/k8s-triage/references/OOMKilled.md", "# OOMKilled\nRaise the memory limit.\n");
  project.put(
    ".agents/skills/summarize/SKILL.md",
    skillFile("summarize", "Summarize a long thread", "Write three bullet points."),
  );
  project.put("secret.txt", "outside the bundle\n");
  return project;
}

async function start(project: Project, args: string[] = [], lines: unknown[] = [say("idle")], mode = "yolo") {
  const daemon = await scope.start({
    cwd: project.root,
    env: { HOME: project.home },
    args: ["--model=scripted", `--script=${writeScript(lines)}`, `--permission-mode=${mode}`, ...args],
  });
  const events = collect(`${daemon.baseUrl}/sessions/default/events`);
  scope.defer(events, (stream) => stream.close());
  await events.waitFor((frame) => frame.event === "usage-update");
  return { daemon, events, base: `${daemon.baseUrl}/sessions/default` };
}

const getJson = async (url: string) => (await (await fetch(url)).json()) as Record<string, unknown>;

test("GET /skills lists the bundles by name; GET /tools adds load_skill and load_skill_resource as source skill; the agent card lists them tagged skill and re-reads them on every fetch", async () => {
  const project = triageProject();
  const { daemon, base } = await start(project, ["--agent-card-description=triage agent"]);
  expect(await getJson(`${base}/skills`)).toEqual({
    skills: [
      { name: "k8s-triage", description: "Triage a Kubernetes incident inject" },
      { name: "summarize", description: "Summarize a long thread" },
    ],
  });
  const tools = (await getJson(`${base}/tools`)).tools as Array<{ name: string; source: string }>;
  expect(tools.filter((tool) => tool.source === "skill").map((tool) => tool.name)).toEqual([
    "load_skill",
    "load_skill_resource",
  ]);
  // Six tool-host builtins and the three loop-control tools (D362).
  expect(tools.filter((tool) => tool.source === "builtin").length).toBe(9);
  const card = await getJson(`${daemon.baseUrl}/.well-known/agent-card.json`);
  expect(card.skills).toEqual([
    { id: "k8s-triage", name: "k8s-triage", description: "Triage a Kubernetes incident inject", tags: ["skill"] },
    { id: "summarize", name: "summarize", description: "Summarize a long thread", tags: ["skill"] },
  ]);
  // The card re-reads the directory per fetch (spec); /skills waits for POST /reload (D136).
  project.put(".agents/skills/escalate/SKILL.md", skillFile("escalate", "Page the on-call", "call alert"));
  const again = await getJson(`${daemon.baseUrl}/.well-known/agent-card.json`);
  expect((again.skills as Array<{ id: string }>).map((skill) => skill.id)).toEqual([
    "escalate",
    "k8s-triage",
    "summarize",
  ]);
  expect(((await getJson(`${base}/skills`)).skills as unknown[]).length).toBe(2);
}, 20_000);

test("a scripted turn loads a skill and then a resource by name: the results carry the SKILL.md body, the resource list and the file's text", async () => {
  const lines = [
    call("load_skill", { name: "k8s-triage" }),
    call("load_skill_resource", { skill_name: "k8s-triage", resource_path: "references/OOMKilled.md" }),
    say("done"),
  ];
  const { events, base } = await start(triageProject(), [], lines);
  const mark = events.frames.length;
  expect((await postJson(`${base}/inject`, { message: "pod OOMKilled" })).status).toBe(200);
  const end = await events.waitFor(
    (frame) => frame.event === "turn-complete" || frame.event === "turn-error",
    15_000,
    mark,
  );
  expect(end.event).toBe("turn-complete");
  const results = toolResults(events);
  expect(results[0]).toMatchObject({
    name: "load_skill",
    response: {
      name: "k8s-triage",
      description: "Triage a Kubernetes incident inject",
      instructions: "# Router\nStep 1: load references/<reason>.md.",
      resources: ["references/OOMKilled.md"],
    },
  });
  expect(results[1]).toMatchObject({
    name: "load_skill_resource",
    response: {
      skill_name: "k8s-triage",
      resource_path: "references/OOMKilled.md",
      content: "# OOMKilled\nRaise the memory limit.\n",
      bytes: 36,
    },
  });
}, 20_000);

test("the skill tools are read-only: in ask mode they run without a prompt", async () => {
  const lines = [call("load_skill", { name: "summarize" }), say("done")];
  const { events, base } = await start(triageProject(), [], lines, "ask");
  const mark = events.frames.length;
  expect((await postJson(`${base}/inject`, { message: "go" })).status).toBe(200);
  const end = await events.waitFor(
    (frame) => frame.event === "turn-complete" || frame.event === "turn-error",
    15_000,
    mark,
  );
  expect(end.event).toBe("turn-complete");
  expect(toolResults(events)[0]?.response).toMatchObject({
    name: "summarize",
    instructions: "Write three bullet points.",
  });
  expect(((await (await fetch(`${base}/perms`)).json()) as { approvals: unknown[] }).approvals).toEqual([]);
}, 20_000);

test("an unknown skill, a missing resource and a path leaving the bundle answer errors the model reads; the turn goes on", async () => {
  const lines = [
    call("load_skill", { name: "nope" }),
    call("load_skill_resource", { skill_name: "k8s-triage", resource_path: "references/Evicted.md" }),
    call("load_skill_resource", { skill_name: "k8s-triage", resource_path: "../../../secret.txt" }),
    call("load_skill", {}),
    say("done"),
  ];
  const { events, base } = await start(triageProject(), [], lines);
  const mark = events.frames.length;
  expect((await postJson(`${base}/inject`, { message: "go" })).status).toBe(200);
  const end = await events.waitFor(
    (frame) => frame.event === "turn-complete" || frame.event === "turn-error",
    15_000,
    mark,
  );
  expect(end.event).toBe("turn-complete");
  const errors = toolResults(events).map((result) => String(result.response.error));
  expect(errors[0]).toBe('skill not found: "nope" (loaded skills: k8s-triage, summarize)');
  expect(errors[1]).toBe(
    'resource not found: "references/Evicted.md" in skill "k8s-triage" (resources: references/OOMKilled.md)',
  );
  expect(errors[2]).toContain("without '..'");
  expect(errors[3]).toContain("invalid arguments for load_skill: name:");
}, 20_000);

test("a bad SKILL.md is left out (the daemon starts, warns naming the file and the field) and the good bundles still load", async () => {
  const project = triageProject();
  project.put(".agents/skills/broken/SKILL.md", "---\nname: broken\n---\nno description\n");
  const { daemon, base } = await start(project);
  expect(((await getJson(`${base}/skills`)).skills as Array<{ name: string }>).map((skill) => skill.name)).toEqual([
    "k8s-triage",
    "summarize",
  ]);
  expect(daemon.log()).toContain(
    `skills: ${project.root}/.agents/skills/broken/SKILL.md: front matter field "description" is required`,
  );
}, 20_000);

test("without skill bundles there are no skill tools and GET /skills is empty", async () => {
  const project = makeProject();
  const { base } = await start(project);
  expect(await getJson(`${base}/skills`)).toEqual({ skills: [] });
  const tools = (await getJson(`${base}/tools`)).tools as Array<{ source: string }>;
  expect(tools.some((tool) => tool.source === "skill")).toBe(false);
}, 20_000);
