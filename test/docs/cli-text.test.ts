/**
 * What the CLI says about itself is so: `spar --help` describes each role as the README's table
 * does (no stale "this build" claims), every help text that points at a page names one that exists
 * and holds what it names, and the README quotes the test command package.json runs.
 */
import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { AGENT_FLAGS } from "../../src/cli/agent-flags.ts";
import { SVC_FLAGS } from "../../src/cli/svc-flags.ts";
import { OPERATOR_VERBS } from "../../src/cli/svc-sessions/operator-command.ts";
import { WATCHER_FLAGS } from "../../src/cli/watcher-flags.ts";
import { REPO_ROOT, sparCommand } from "../support/daemon.ts";
import { runToExit } from "../support/daemon-scope.ts";

const README = readFileSync(join(REPO_ROOT, "README.md"), "utf8");

/** The README's role table: command to its "what it is" cell. */
function readmeRoles(): Map<string, string> {
  const rows = [...README.matchAll(/^\| `spar ([a-z ]+)` \| ([^|]+) \|/gm)];
  return new Map(rows.map((row) => [row[1]?.trim() ?? "", row[2]?.trim() ?? ""]));
}

test("`spar --help` describes each role as the README's table does, with no stale build caveat", async () => {
  const { code, stdout } = await runToExit(sparCommand("--help"));
  expect(code).toBe(0);
  const roles = readmeRoles();
  expect([...roles.keys()]).toEqual(["agent", "svc", "watcher watch"]);
  for (const [command, what] of roles) {
    const line = stdout.split("\n").find((text) => text.startsWith(`  ${command} `));
    expect(line?.slice(2 + command.length).trim()).toStartWith(what);
  }
  expect(stdout).not.toContain("this build");
});

/** GitHub's heading anchor, enough for the headings help texts point at. */
function slug(heading: string): string {
  return heading
    .replace(/`/g, "")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");
}

test("help texts that point at a page name one that exists, at a heading it has; none sends the reader to the README", () => {
  const specs = [...AGENT_FLAGS, ...SVC_FLAGS, ...WATCHER_FLAGS, ...OPERATOR_VERBS.flatMap((verb) => verb.flags)];
  const pointers = specs.flatMap((spec) =>
    [...spec.help.matchAll(/\b(docs\/[\w-]+\.md)(?:#([\w-]+))?/g)].map((match) => ({
      flag: spec.name,
      page: match[1] ?? "",
      anchor: match[2],
    })),
  );
  expect(pointers).toContainEqual({ flag: "auth-table", page: "docs/configuration.md", anchor: "caller-table-file" });
  for (const pointer of pointers) {
    const file = join(REPO_ROOT, pointer.page);
    expect(existsSync(file)).toBe(true);
    if (pointer.anchor === undefined) continue;
    const headings = [...readFileSync(file, "utf8").matchAll(/^#{1,6} +(.+)$/gm)].map((match) => slug(match[1] ?? ""));
    expect(headings).toContain(pointer.anchor);
  }
  expect(specs.filter((spec) => /\bREADME\b/.test(spec.help)).map((spec) => spec.name)).toEqual([]);
});

test("the README quotes the test command package.json runs", () => {
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { scripts: { test: string } };
  expect(pkg.scripts.test).toContain("--error-on-warnings");
  expect(README).toContain(`It is \`${pkg.scripts.test}\``);
  const script = readFileSync(join(REPO_ROOT, "scripts/test"), "utf8");
  expect(script).toContain(pkg.scripts.test);
});
