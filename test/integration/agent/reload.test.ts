/**
 * POST /reload in a real daemon: a skill added and an AGENTS.md edited after start show on
 * GET /skills, GET /memory and GET /tools once reloaded, with the counts in the answer; a bad
 * SKILL.md is an entry in `errors` naming the file and the field (200, the daemon keeps serving
 * and keeps the good bundles); the write guards (415 without JSON, 403 read-only) and the ACL
 * (a viewer reads /memory and /skills but cannot reload: 404, masked).
 */
import { expect, test } from "bun:test";
import { daemonScope } from "../../support/daemon-scope.ts";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "../../../src/surfaces/http/caller-auth.ts";
import { postJson, tempDir } from "../../support/daemon.ts";
import { type Project, makeProject, skillFile } from "./skills-project.ts";

const scope = daemonScope();

async function start(project: Project, args: string[] = []) {
  const daemon = await scope.start({ cwd: project.root, env: { HOME: project.home }, args });
  return { daemon, base: `${daemon.baseUrl}/sessions/default` };
}

const getJson = async (url: string) => (await (await fetch(url)).json()) as Record<string, unknown>;

test("a new skill and an edited AGENTS.md show on /skills, /memory and /tools after POST /reload, not before", async () => {
  const project = makeProject();
  project.put("AGENTS.md", "short\n");
  const { base } = await start(project);
  expect(await getJson(`${base}/skills`)).toEqual({ skills: [] });
  expect(
    ((await getJson(`${base}/tools`)).tools as Array<{ source: string }>).some((tool) => tool.source === "skill"),
  ).toBe(false);

  project.put(".agents/skills/deploy/SKILL.md", skillFile("deploy", "Roll out a service", "steps"));
  project.put("AGENTS.md", "a longer text now\n");
  project.putHome(".agents/AGENTS.md", "user\n");
  expect(await getJson(`${base}/skills`)).toEqual({ skills: [] });
  expect(await getJson(`${base}/memory`)).toEqual({
    sources: [{ scope: "project", path: join(project.root, "AGENTS.md"), bytes: 6 }],
  });

  const reload = await postJson(`${base}/reload`);
  expect(reload.status).toBe(200);
  expect(await reload.json()).toEqual({ memory: 2, skills: 1, mcp: 0, errors: [] });
  expect(await getJson(`${base}/skills`)).toEqual({ skills: [{ name: "deploy", description: "Roll out a service" }] });
  expect(await getJson(`${base}/memory`)).toEqual({
    sources: [
      { scope: "user", path: join(project.home, ".agents", "AGENTS.md"), bytes: 5 },
      { scope: "project", path: join(project.root, "AGENTS.md"), bytes: 18 },
    ],
  });
  const tools = (await getJson(`${base}/tools`)).tools as Array<{ name: string; source: string }>;
  expect(tools.filter((tool) => tool.source === "skill").map((tool) => tool.name)).toEqual([
    "load_skill",
    "load_skill_resource",
  ]);

  rmSync(join(project.root, ".agents", "skills", "deploy"), { recursive: true });
  expect(await (await postJson(`${base}/reload`)).json()).toEqual({ memory: 2, skills: 0, mcp: 0, errors: [] });
  expect(await getJson(`${base}/skills`)).toEqual({ skills: [] });
}, 20_000);

test("a bad SKILL.md: 200 with the file and the field in errors, the good bundles stay, the daemon keeps serving", async () => {
  const project = makeProject();
  project.put(".agents/skills/good/SKILL.md", skillFile("good", "Works", "ok"));
  const { base, daemon } = await start(project);
  project.put(".agents/skills/bad-yaml/SKILL.md", "---\nname: bad-yaml\ndescription: [unclosed\n---\n");
  project.put(".agents/skills/no-desc/SKILL.md", "---\nname: no-desc\n---\nbody\n");
  project.put(".agents/skills/no-front/SKILL.md", "# no front matter\n");
  const reload = await postJson(`${base}/reload`);
  expect(reload.status).toBe(200);
  const body = (await reload.json()) as { skills: number; errors: string[] };
  const dir = join(project.root, ".agents", "skills");
  expect(body.skills).toBe(1);
  expect(body.errors).toHaveLength(3);
  expect(body.errors[0]).toStartWith(`skills: ${dir}/bad-yaml/SKILL.md: front matter is not valid YAML`);
  expect(body.errors[1]).toBe(
    `skills: ${dir}/no-desc/SKILL.md: front matter field "description" is required (a string)`,
  );
  expect(body.errors[2]).toBe(
    `skills: ${dir}/no-front/SKILL.md: front matter missing: the file must start with a line '---'`,
  );
  expect(await getJson(`${base}/skills`)).toEqual({ skills: [{ name: "good", description: "Works" }] });
  expect((await fetch(`${daemon.baseUrl}/healthz`)).status).toBe(200);
}, 20_000);

test("POST /reload is a write: 415 without a JSON content type, 403 on a read-only listener; GET /memory and /skills stay readable", async () => {
  const project = makeProject();
  const { base } = await start(project);
  expect((await fetch(`${base}/reload`, { method: "POST" })).status).toBe(415);
  const readonly = await start(makeProject(), ["--attach-readonly"]);
  expect((await postJson(`${readonly.base}/reload`)).status).toBe(403);
  expect((await fetch(`${readonly.base}/memory`)).status).toBe(200);
  expect((await fetch(`${readonly.base}/skills`)).status).toBe(200);
}, 20_000);

test("multi-session: a viewer reads /memory and /skills but POST /reload is SessionWrite (404 masked); a contributor reloads", async () => {
  const project = makeProject();
  project.put("AGENTS.md", "rules\n");
  const dir = tempDir();
  const tokens = { olga: "tok-olga", cora: "tok-cora", vic: "tok-vic" };
  const table = join(dir, "callers.yaml");
  writeFileSync(
    table,
    [
      "callers:",
      ...Object.entries(tokens).map(([name, token]) => `  - identity: ${name}\n    token_sha256: ${sha256Hex(token)}`),
      "",
    ].join("\n"),
  );
  const { daemon } = await start(project, ["--multi-session", `--auth-table=${table}`]);
  const as = (who: keyof typeof tokens) => ({ authorization: `Bearer ${tokens[who]}` });
  expect(
    (
      await postJson(
        `${daemon.baseUrl}/sessions`,
        { sessionID: "olgas", viewers: ["vic"], contributors: ["cora"] },
        as("olga"),
      )
    ).status,
  ).toBe(201);
  const base = `${daemon.baseUrl}/sessions/olgas`;
  expect(await (await fetch(`${base}/memory`, { headers: as("vic") })).json()).toEqual({
    sources: [{ scope: "project", path: join(project.root, "AGENTS.md"), bytes: 6 }],
  });
  expect((await fetch(`${base}/skills`, { headers: as("vic") })).status).toBe(200);
  expect((await postJson(`${base}/reload`, undefined, as("vic"))).status).toBe(404);
  const reload = await postJson(`${base}/reload`, undefined, as("cora"));
  expect(reload.status).toBe(200);
  expect(await reload.json()).toEqual({ memory: 1, skills: 0, mcp: 0, errors: [] });
}, 20_000);
