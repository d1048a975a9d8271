/**
 * docs/architecture.md stays a true map of the code: every folder directly under src/ (and under
 * src/svc/, src/store/ and src/surfaces/) has a row in its "Layers and folders" table, no row names
 * a folder that is gone, and every module the page names by file (`surfaces/http/guarded-app.ts`,
 * `group-commit.ts`) is a file of the repository.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";

const REPO_ROOT = resolve(import.meta.dir, "..", "..");
const PAGE = "docs/architecture.md";

/** The folders whose subfolders each need a row: src/ itself and the layers split in folders. */
const MAPPED = ["src", "src/svc", "src/store", "src/surfaces"];

/** The text of a `## ` section, up to the next `## ` heading; "" when the page has no such section. */
export function section(markdown: string, heading: string): string {
  const lines = markdown.split("\n");
  const start = lines.findIndex((line) => line.trim() === `## ${heading}`);
  if (start < 0) return "";
  const end = lines.findIndex((line, index) => index > start && line.startsWith("## "));
  return lines.slice(start + 1, end < 0 ? undefined : end).join("\n");
}

/** The `src/.../` folders named in the first cell of the table rows of a section, as `src/x/y`. */
export function folderRows(sectionText: string): Set<string> {
  const folders = new Set<string>();
  for (const line of sectionText.split("\n")) {
    if (!line.startsWith("|") || /^\|[\s|:-]*$/.test(line)) continue;
    const firstCell = line.split("|")[1] ?? "";
    for (const match of firstCell.matchAll(/`(src\/[^`]*?)\/?`/g)) folders.add(match[1] ?? "");
  }
  return folders;
}

/** The repository's folders that need a row: each subfolder of a MAPPED folder, as `src/x/y`. */
function foldersOnDisk(): string[] {
  return MAPPED.flatMap((parent) =>
    readdirSync(join(REPO_ROOT, parent), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => `${parent}/${entry.name}`),
  ).sort();
}

/** Inline-code tokens of prose (fenced blocks left out) that name one TypeScript file: no globs or placeholders. */
export function moduleNames(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, "");
  const names = [...prose.matchAll(/`([\w./-]+\.ts)`/g)].map((match) => match[1] ?? "");
  return [...new Set(names)].sort();
}

/** Every file of the trees a page may name, as repository paths. */
function repositoryFiles(): string[] {
  return ["src", "workers", "scripts", "test", "bench"].flatMap((tree) =>
    [...new Bun.Glob(`${tree}/**/*.ts`).scanSync({ cwd: REPO_ROOT, onlyFiles: true })].map((path) =>
      path.split("\\").join("/"),
    ),
  );
}

/** A name resolves when a file's path is it or ends with it after a `/` (`rpc/x.ts`, `x.ts`). */
export function unresolved(names: readonly string[], files: readonly string[]): string[] {
  return names.filter((name) => !files.some((file) => file === name || file.endsWith(`/${name}`)));
}

describe("the page's readers", () => {
  const sample = [
    "## Layers and folders",
    "",
    "| folder | owns |",
    "|---|---|",
    "| `src/core/` | the domain, see `src/net/` |",
    "| `src/a/`, `src/b/` | two in one row |",
    "| `src/svc/gate/` | a subfolder |",
    "",
    "Prose naming `src/prose/` is no row.",
    "",
    "## Threads",
    "",
    "| `src/later/` | another section |",
  ].join("\n");

  test("reads the folders of the first cells of one section's table", () => {
    expect([...folderRows(section(sample, "Layers and folders"))].sort()).toEqual([
      "src/a",
      "src/b",
      "src/core",
      "src/svc/gate",
    ]);
    expect(section(sample, "No such section")).toBe("");
  });

  test("finds module names outside code fences and tells which name no file", () => {
    const markdown = "`a/b.ts` and `c.ts`, not `x/*-y.ts` or `<z>.ts`\n```\n`fenced.ts`\n```\n";
    expect(moduleNames(markdown)).toEqual(["a/b.ts", "c.ts"]);
    expect(unresolved(["a/b.ts", "c.ts", "gone.ts"], ["src/a/b.ts", "workers/c.ts"])).toEqual(["gone.ts"]);
  });
});

describe(PAGE, () => {
  const markdown = readFileSync(join(REPO_ROOT, PAGE), "utf8");
  const rows = folderRows(section(markdown, "Layers and folders"));

  test("has a row in its layers table for every folder under src/, src/svc/, src/store/ and src/surfaces/", () => {
    const onDisk = foldersOnDisk();
    expect(onDisk).toContain("src/svc/gate");
    expect(onDisk.filter((folder) => !rows.has(folder))).toEqual([]);
  });

  test("names no folder in its layers table that is not in the repository", () => {
    const isFolder = (folder: string) =>
      existsSync(join(REPO_ROOT, folder)) && statSync(join(REPO_ROOT, folder)).isDirectory();
    expect(rows.size).toBeGreaterThan(20);
    expect([...rows].filter((folder) => !isFolder(folder))).toEqual([]);
  });

  test("names only modules that are files of the repository", () => {
    const names = moduleNames(markdown);
    expect(names.length).toBeGreaterThan(50);
    expect(unresolved(names, repositoryFiles())).toEqual([]);
  });
});
