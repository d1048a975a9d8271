/**
 * The two generated files that put skills/k8s-triage/ into the agent pod (scripts/deploy-skill.ts,
 * D472) are what the script renders from the bundle as it is now: a reference added or renamed
 * without running the script fails here.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { BUNDLE, SKILLS_ROOT, bundleFiles, renderSkillManifests } from "../../scripts/deploy-skill.ts";

test("skills/kustomization.yaml and deploy/base/agent-skill.yaml are current (run bun scripts/deploy-skill.ts)", () => {
  for (const { path, text } of renderSkillManifests()) expect(readFileSync(path, "utf8"), path).toBe(text);
});

test("every file of the bundle has its key, and no two files share one", () => {
  const files = bundleFiles();
  const onDisk = [...new Bun.Glob(`${BUNDLE}/**/*`).scanSync({ cwd: SKILLS_ROOT, onlyFiles: true })].sort();
  expect(files.map((file) => file.path).sort()).toEqual(onDisk);
  expect(new Set(files.map((file) => file.key)).size).toBe(files.length);
  for (const { key } of files) expect(key).toMatch(/^[-._a-zA-Z0-9]+$/);
  expect(readFileSync(join(SKILLS_ROOT, BUNDLE, "SKILL.md"), "utf8")).toContain("name: k8s-triage");
});
