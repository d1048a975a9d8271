/**
 * The shipped k8s-triage bundle (skills/k8s-triage/) in a real daemon (D476): `--skills-dir`
 * pointed at the repository's skills/ lists it with no reload error, and a scripted turn follows
 * the router's lookup: a known reason's reference loads, an unknown one answers `resource not
 * found` and `references/_fallback.md` loads in its place.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { daemonScope } from "../../support/daemon-scope.ts";
import { postJson } from "../../support/daemon.ts";
import { call, toolResults, writeScript } from "../../support/scripted.ts";
import { collect } from "../../support/sse-client.ts";
import { BUNDLE, SKILLS_ROOT } from "../../support/triage-references.ts";
import { makeProject } from "./skills-project.ts";

const scope = daemonScope();

const say = (text: string) => ({
  request: {},
  responses: [{ content: { role: "model", parts: [{ text }] }, turnComplete: true }],
});

test("the shipped bundle loads in the daemon; a reason's reference loads, an unknown reason falls back to _fallback.md", async () => {
  const resource = (path: string) => call("load_skill_resource", { skill_name: "k8s-triage", resource_path: path });
  const lines = [
    call("load_skill", { name: "k8s-triage" }),
    resource("references/ImagePullBackOff.md"),
    resource("references/SomethingNew.md"),
    resource("references/_fallback.md"),
    say("done"),
  ];
  const project = makeProject();
  const daemon = await scope.start({
    cwd: project.root,
    env: { HOME: project.home },
    args: [
      "--model=scripted",
      `--script=${writeScript(lines)}`,
      "--permission-mode=yolo",
      `--skills-dir=${SKILLS_ROOT}`,
    ],
  });
  const base = `${daemon.baseUrl}/sessions/default`;
  const reload = await postJson(`${base}/reload`);
  expect(await reload.json()).toMatchObject({ skills: 1, errors: [] });
  const listed = (await (await fetch(`${base}/skills`)).json()) as { skills: { name: string }[] };
  expect(listed.skills.map((skill) => skill.name)).toEqual(["k8s-triage"]);

  const events = collect(`${base}/events`);
  scope.defer(events, (stream) => stream.close());
  await events.waitFor((frame) => frame.event === "usage-update");
  const mark = events.frames.length;
  expect(
    (await postJson(`${base}/inject`, { message: '{"kind":"cluster-event","reason":"SomethingNew"}' })).status,
  ).toBe(200);
  const end = await events.waitFor(
    (frame) => frame.event === "turn-complete" || frame.event === "turn-error",
    15_000,
    mark,
  );
  expect(end.event).toBe("turn-complete");
  const [router, known, unknown, fallback] = toolResults(events);
  expect(String(router?.response.instructions)).toContain("INCIDENT SUMMARY");
  expect(router?.response.resources).toContain("references/_fallback.md");
  expect(known?.response.content).toBe(readFileSync(join(BUNDLE, "references", "ImagePullBackOff.md"), "utf8"));
  expect(String(unknown?.response.error)).toStartWith('resource not found: "references/SomethingNew.md"');
  expect(fallback?.response.content).toBe(readFileSync(join(BUNDLE, "references", "_fallback.md"), "utf8"));
}, 30_000);
