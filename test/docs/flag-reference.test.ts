/**
 * docs/flags.md is generated from the flag tables (scripts/flag-reference.ts): it must be exactly
 * what the script renders now, and every flag `--help` prints must be in it (the agent's, svc's,
 * each operator verb's and the watcher's), so `--help` and the docs never disagree.
 * docs/configuration.md must name every config key the agent's flags read.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { AGENT_FLAGS } from "../../src/cli/agent-flags.ts";
import { SVC_FLAGS, svcHelp } from "../../src/cli/svc-flags.ts";
import { OPERATOR_VERBS } from "../../src/cli/svc-sessions/operator-command.ts";
import { renderHelp } from "../../src/config/flag-parser.ts";
import { watcherHelp } from "../../src/cli/watcher-args.ts";
import { FLAG_REFERENCE_PATH, renderFlagReference } from "../../scripts/flag-reference.ts";

const DOCS = resolve(import.meta.dir, "..", "..", "docs");

/** The flag names a help text lists (`  --name` or `  --name=<kind>` lines), `--help` left out. */
function helpFlagNames(help: string): string[] {
  return [...help.matchAll(/^ {2}--([a-z0-9-]+)/gm)].map((match) => match[1] ?? "").filter((name) => name !== "help");
}

describe("docs/flags.md", () => {
  const written = readFileSync(FLAG_REFERENCE_PATH, "utf8");

  test("is exactly what scripts/flag-reference.ts renders from the flag tables (run it after changing a flag)", () => {
    expect(written).toBe(renderFlagReference());
  });

  test("lists every flag `spar agent --help` prints, with its config key", () => {
    const names = helpFlagNames(renderHelp("spar agent", "", AGENT_FLAGS));
    expect(names.length).toBeGreaterThan(50);
    const missing = names.filter((name) => !written.includes(`\`--${name}`));
    expect(missing).toEqual([]);
    const keys = AGENT_FLAGS.flatMap((flag) => (flag.configKey ? [flag.configKey] : []));
    expect(keys.filter((key) => !written.includes(`\`${key}\``))).toEqual([]);
  });

  test("lists every flag `spar svc --help` prints, with its config key, in the svc section", () => {
    const names = helpFlagNames(svcHelp());
    expect(names.length).toBeGreaterThan(40);
    const section = written.slice(written.indexOf("## `spar svc`"), written.indexOf("## `spar svc sessions`"));
    expect(section).toContain(`${SVC_FLAGS.length} flags.`);
    expect(names.filter((name) => !section.includes(`\`--${name}`))).toEqual([]);
    const keys = SVC_FLAGS.flatMap((flag) => (flag.configKey ? [flag.configKey] : []));
    expect(keys.filter((key) => !section.includes(`\`${key}\``))).toEqual([]);
  });

  test("lists every operator verb and each flag its `--help` prints", () => {
    for (const verb of OPERATOR_VERBS) {
      const start = written.indexOf(`### \`spar svc ${verb.name}\``);
      expect(start).toBeGreaterThan(0);
      const next = written.indexOf("\n#", start + 1);
      const section = written.slice(start, next === -1 ? undefined : next);
      const help = renderHelp(`spar svc ${verb.usage}`, verb.summary, verb.flags);
      expect(helpFlagNames(help).filter((name) => !section.includes(`\`--${name}`))).toEqual([]);
    }
  });

  test("lists every flag `spar watcher watch --help` prints", () => {
    const names = helpFlagNames(watcherHelp());
    expect(names.length).toBeGreaterThan(90);
    expect(names.filter((name) => !written.includes(`\`--${name}`))).toEqual([]);
  });

  test("a changed help text makes the rendered page differ (the check can fail)", () => {
    const first = AGENT_FLAGS[0];
    if (!first) throw new Error("no agent flags");
    const original = first.help;
    (first as { help: string }).help = `${original} (changed)`;
    try {
      expect(renderFlagReference()).not.toBe(written);
    } finally {
      (first as { help: string }).help = original;
    }
  });
});

test("docs/configuration.md names every config key an agent flag reads", () => {
  const page = readFileSync(join(DOCS, "configuration.md"), "utf8");
  const keys = AGENT_FLAGS.flatMap((flag) => (flag.configKey ? [flag.configKey] : []));
  expect(keys.length).toBeGreaterThan(50);
  expect(keys.filter((key) => !page.includes(`\`${key}\``))).toEqual([]);
});
