/**
 * Reading the k8s-triage skill bundle (skills/k8s-triage/) the way its tests check it: the
 * reasons the watcher sends by default (from the code: DEFAULT_REASONS and the reasons of every
 * source `auto` may run, D476), a reference's sections, and its one `wait_and_verify(...)` call
 * parsed into the arguments that tool takes (D477).
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { EXPLICIT_ONLY_SOURCES } from "../../src/watcher/watcher-config.ts";
import { SOURCE_SPECS } from "../../src/watcher/core/source-catalog.ts";
import { DEFAULT_REASONS } from "../../src/watcher/core/reasons.ts";

export const SKILLS_ROOT = resolve(import.meta.dir, "..", "..", "skills");
export const BUNDLE = join(SKILLS_ROOT, "k8s-triage");

/** The read tools of kubernetes-mcp-server (read-only) as spar names them (`k8s__<tool>`, D120). */
export const READ_TOOLS = [
  "k8s__resources_get",
  "k8s__resources_list",
  "k8s__pods_get",
  "k8s__pods_log",
  "k8s__events_list",
  "k8s__pods_list_in_namespace",
  "k8s__nodes_top",
  "k8s__pods_top",
  "k8s__namespaces_list",
] as const;

export const FULL_SECTIONS = [
  "Budget",
  "Diagnose (read-only)",
  "Convergence check",
  "Remediation proposals",
  "When to escalate",
];

/** Every reason a watcher with the default `--reason` list and `--sources=auto` can send. */
export function defaultReasons(): string[] {
  const sources = SOURCE_SPECS.filter((spec) => !(EXPLICIT_ONLY_SOURCES as readonly string[]).includes(spec.name));
  return [...new Set([...DEFAULT_REASONS, ...sources.flatMap((spec) => spec.reasons)])].sort();
}

export function readReference(reason: string): string {
  return readFileSync(join(BUNDLE, "references", `${reason}.md`), "utf8");
}

/** `## ` headings in order (fenced blocks skipped). */
export function sectionTitles(markdown: string): string[] {
  return sections(markdown).map((section) => section.title);
}

export function sections(markdown: string): { title: string; body: string }[] {
  const found: { title: string; body: string }[] = [];
  let inFence = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) inFence = !inFence;
    const heading = !inFence && /^## (.+)$/.exec(line);
    if (heading) found.push({ title: heading[1] ?? "", body: "" });
    else {
      const last = found.at(-1);
      if (last) last.body += `${line}\n`;
    }
  }
  return found;
}

export function section(markdown: string, title: string): string {
  return sections(markdown).find((one) => one.title === title)?.body ?? "";
}

/** The references a chain stub sends to (`references/<X>.md` in its `## Chain to`). */
export function chainTargets(markdown: string): string[] {
  return [...section(markdown, "Chain to").matchAll(/`references\/([^`]+)\.md`/g)].map((match) => match[1] ?? "");
}

export interface WaitCall {
  tool: string;
  args_json: string;
  expect_jq?: string;
  expect_contains?: string;
  expect_not_contains?: string;
  interval_seconds?: number;
  timeout_seconds?: number;
  max_attempts?: number;
}

/** Every `wait_and_verify(...)` call written in `text`, its `key=value` arguments parsed. */
export function waitCalls(text: string): WaitCall[] {
  return [...text.matchAll(/wait_and_verify\((.*)\)\s*$/gm)].map((match) => parseArguments(match[1] ?? ""));
}

function parseArguments(list: string): WaitCall {
  const call: Record<string, string | number> = {};
  const argument = /\s*(\w+)=(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|(\d+))\s*(?:,|$)/y;
  let at = 0;
  while (at < list.length) {
    argument.lastIndex = at;
    const match = argument.exec(list);
    if (!match) throw new Error(`cannot parse wait_and_verify arguments at ${JSON.stringify(list.slice(at))}`);
    const [, key = "", double, single, number] = match;
    call[key] = number !== undefined ? Number(number) : (double ?? single ?? "").replace(/\\"/g, '"');
    at = argument.lastIndex;
  }
  return call as unknown as WaitCall;
}

/** A check's `args_json` with its placeholders filled. */
export function fillArgs(argsJson: string, values: Record<string, string>): Record<string, unknown> {
  const filled = argsJson.replace(
    /\{(namespace|name|kind_of_object|node|workload)\}/g,
    (_, key: string) => values[key] ?? key,
  );
  return JSON.parse(filled) as Record<string, unknown>;
}

/** Whether a check's substring conditions hold on a tool's output text. */
export function conditionHolds(call: WaitCall, output: string): boolean {
  if (call.expect_contains !== undefined && !output.includes(call.expect_contains)) return false;
  if (call.expect_not_contains !== undefined && output.includes(call.expect_not_contains)) return false;
  return true;
}
