/**
 * The shipped triage skill (skills/k8s-triage/, D476-D479): it loads with the daemon's own skill
 * loader; every reason the watcher sends by default (read from the code) has a reference; each
 * reference keeps the sections in order, names only the read tools of the k8s MCP server, and
 * holds one wait_and_verify call within the tool's bounds; the router writes the summary block
 * line by line and pages before it.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { MAX_SKILL_FILE_BYTES, scanSkills } from "../../../src/skills/skill-library.ts";
import { SOURCE_SPECS } from "../../../src/watcher/core/source-catalog.ts";
import { DEFAULT_REASONS } from "../../../src/watcher/core/reasons.ts";
import {
  BUNDLE,
  FULL_SECTIONS,
  READ_TOOLS,
  SKILLS_ROOT,
  chainTargets,
  defaultReasons,
  fillArgs,
  readReference,
  section,
  sectionTitles,
  waitCalls,
} from "../../support/triage-references.ts";

const scan = scanSkills(SKILLS_ROOT);
const skill = scan.skills.find((one) => one.name === "k8s-triage");
const referenceNames = readdirSync(join(BUNDLE, "references"))
  .filter((file) => file.endsWith(".md"))
  .map((file) => file.slice(0, -3))
  .sort();
const isStub = (reason: string) => sectionTitles(readReference(reason))[0] === "Chain to";
const PLACEHOLDERS = {
  namespace: "shop",
  name: "web-1",
  kind_of_object: "Deployment",
  node: "node-1",
  workload: "web",
};

describe("the bundle", () => {
  test("loads with the daemon's skill loader, without errors", () => {
    expect(scan.errors).toEqual([]);
    expect(skill?.description).toContain("INCIDENT SUMMARY");
    expect(skill?.resources).toContain("references/_fallback.md");
  });

  test("has a reference for every reason of the default reasons and of every source auto runs", () => {
    const reasons = defaultReasons();
    expect(reasons).toEqual(expect.arrayContaining([...DEFAULT_REASONS, "rollout_stall", "node_notready"]));
    expect(reasons).not.toContain("quota_forecast");
    const missing = reasons.filter((reason) => !skill?.resources.includes(`references/${reason}.md`));
    expect(missing).toEqual([]);
  });

  test("every reference the bundle's files point to exists, and every file stays under the loader's cap", () => {
    const files = ["SKILL.md", ...(skill?.resources ?? [])];
    const named = files.flatMap((file) =>
      [...readFileSync(join(BUNDLE, file), "utf8").matchAll(/references\/([\w-]+)\.md/g)].map(
        (match) => match[1] ?? "",
      ),
    );
    expect(named).toContain("_fallback");
    expect([...new Set(named)].filter((name) => !referenceNames.includes(name))).toEqual([]);
    for (const file of files) expect(statSync(join(BUNDLE, file)).size).toBeLessThan(MAX_SKILL_FILE_BYTES);
  });

  test("each source declares the reasons its detectors write literally", () => {
    const declared = new Set(SOURCE_SPECS.flatMap((spec) => spec.reasons));
    const dir = join(import.meta.dir, "..", "..", "..", "src", "watcher", "core", "sources");
    const written = readdirSync(dir).flatMap((file) =>
      [...readFileSync(join(dir, file), "utf8").matchAll(/\breason: "([a-z_-]+)"/g)].map((match) => match[1] ?? ""),
    );
    expect(written.length).toBeGreaterThan(10);
    expect(written.filter((reason) => !declared.has(reason))).toEqual([]);
  });
});

describe("each reference", () => {
  test.each(referenceNames)("%s: titled by its reason, sections in order", (reason) => {
    const text = readReference(reason);
    expect(text.split("\n")[0]).toBe(`# ${reason}`);
    const titles = sectionTitles(text);
    if (isStub(reason)) {
      expect(titles).toEqual(["Chain to"]);
      const targets = chainTargets(text);
      expect(targets.length).toBeGreaterThan(0);
      for (const target of targets) {
        expect(referenceNames).toContain(target);
        expect(isStub(target)).toBe(false);
      }
      return;
    }
    expect(titles).toEqual(FULL_SECTIONS);
    expect(section(text, "Budget")).toMatch(/^Max turns: \d+$/m);
    expect(section(text, "Budget")).toMatch(/^Max wall time: \d+ min$/m);
    const steps = section(text, "Diagnose (read-only)")
      .split("\n")
      .filter((line) => /^\d+\. /.test(line));
    expect(steps.length).toBeGreaterThan(1);
    for (const step of steps) expect(step).toMatch(/`k8s__\w+`/);
    expect(section(text, "Remediation proposals")).toContain("| Evidence | Proposed change | Verify |");
    expect(section(text, "When to escalate").trim()).not.toBe("");
  });

  test.each(referenceNames)("%s: names only the read tools of the k8s server", (reason) => {
    const named = [...readReference(reason).matchAll(/\bk8s__\w+/g)].map((match) => match[0]);
    expect(named.filter((tool) => !(READ_TOOLS as readonly string[]).includes(tool))).toEqual([]);
  });

  test.each(referenceNames.filter((reason) => !isStub(reason)))(
    "%s: one wait_and_verify call that the tool would take",
    (reason) => {
      const text = readReference(reason);
      expect(waitCalls(text.replace(section(text, "Convergence check"), ""))).toEqual([]);
      const calls = waitCalls(section(text, "Convergence check"));
      expect(calls).toHaveLength(1);
      const call = calls[0];
      if (!call) throw new Error("no call");
      expect(READ_TOOLS as readonly string[]).toContain(call.tool);
      expect(typeof JSON.parse(call.args_json)).toBe("object");
      expect(typeof fillArgs(call.args_json, PLACEHOLDERS)).toBe("object");
      expect(call.expect_contains ?? call.expect_not_contains ?? call.expect_jq).toBeDefined();
      // Substrings of YAML text: one line, no quotes, so they read the same in a JSON-escaped result (D477).
      for (const needle of [call.expect_contains, call.expect_not_contains].filter((one) => one !== undefined))
        expect(needle).toMatch(/^[^"\n\\]+$/);
      expect(call.interval_seconds).toBeGreaterThanOrEqual(1);
      expect(call.timeout_seconds).toBeLessThanOrEqual(300);
      expect(call.max_attempts).toBeLessThanOrEqual(40);
      expect((call.max_attempts ?? 0) * (call.interval_seconds ?? 0)).toBeGreaterThanOrEqual(
        (call.timeout_seconds ?? 0) - (call.interval_seconds ?? 0),
      );
    },
  );
});

describe("the router", () => {
  const router = skill?.instructions ?? "";

  test("records the plan before loading a reference, and falls back when none exists", () => {
    const plan = router.indexOf("`record_plan`");
    const load = router.indexOf('load_skill_resource(skill_name="k8s-triage", resource_path="references/{reason}.md")');
    expect(plan).toBeGreaterThan(-1);
    expect(load).toBeGreaterThan(plan);
    expect(router).toContain("references/_fallback.md");
  });

  test("grants RESOLVED only on verified: true, and pages before the summary otherwise", () => {
    expect(router).toContain("RESOLVED is allowed only on `verified: true`");
    const alert = router.indexOf('alert(target="oncall"');
    expect(alert).toBeGreaterThan(-1);
    expect(router.indexOf("INCIDENT SUMMARY\n=====")).toBeGreaterThan(alert);
    expect(router).toContain("`not sent (no alert target configured)`");
  });

  test("writes the summary block with every line in order", () => {
    const block = /```text\n(INCIDENT SUMMARY\n[\s\S]*?)```/.exec(router)?.[1] ?? "";
    const lines = block.trimEnd().split("\n");
    const expected = [
      /^INCIDENT SUMMARY$/,
      /^=+$/,
      /^Status: RESOLVED \| UNRESOLVED \| ESCALATED$/,
      /^Incident: \{namespace\}\/\{name\} \(\{uid\}\)$/,
      /^Reason: \{reason\}$/,
      /^Cluster: \{cluster\}$/,
      /^Reference used: references\/\{reason\}\.md$/,
      /^Root cause: /,
      /^Evidence:$/,
      /^ {2}1\. <tool call> {2}→ /,
      /^ {2}2\. wait_and_verify\(<tool>, <condition>\) → verified=<bool> after <n> attempts \/ <s>s$/,
      /^Proposal: <exact change, or "none — resolved" \/ "none — escalated">$/,
      /^Escalation: alert\(oncall\) sent \| not sent \(<why>\)$/,
      /^Final state: /,
      /^Session URL: /,
    ];
    expect(lines).toHaveLength(expected.length);
    for (const [index, line] of lines.entries()) expect(line).toMatch(expected[index] as RegExp);
  });
});
