/**
 * The contract lives in the repository. A comment in src/ or workers/, or a page in docs/, that
 * cites a document a maintainer cannot open (the specs, the reference notes, the design notes, "the
 * original" daemon) is found here with its file:line (test/docs/citations.test.ts fails on it); it should cite a docs page and section, or a
 * decision (D123), instead. Every `docs/<page>.md#<anchor>` a comment cites must name a page that
 * exists and one of its headings. docs/wire-compat.md is the one page that speaks of the original
 * daemon: it says which of its wire shapes spar keeps and why. The decision record (owned and
 * split elsewhere) is history, not checked here.
 */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { anchorsOf } from "./markdown-anchors.ts";

const REPO_ROOT = resolve(import.meta.dir, "..", "..");

/** Phrases that cite a document outside the repository, each with what it names. */
const OUTSIDE: readonly { pattern: RegExp; names: string }[] = [
  { pattern: /\bthe spec\b|\bspec's\b|\bspec\s*:|\bspec\s+"|\bspec\s+(?:rule|section)s?\b/i, names: "a spec" },
  {
    pattern: /\b(?:attach-daemon|workflow-daemon|cluster-watcher|daemon|watcher)\s+spec(?:ification)?\b/i,
    names: "a spec",
  },
  { pattern: /\bspec\s+(?:attach|workflow|cluster)-|\(spec\b|;\s*spec\b|\bspec\s+[A-Z`]/, names: "a spec" },
  { pattern: /\brules? \d+\b/i, names: "a spec's numbered rule" },
  {
    pattern: /\breference\s+(?:\d|N\b|sections?\b|notes?\b)|\(reference\b|\breference:|\breference's\b/i,
    names: "the reference notes",
  },
  {
    pattern: /\battach-wire\b|\bprotocols\.md\b|\bkubernetes-testing\.md\b|\bbun-platform\.md\b/i,
    names: "the reference notes",
  },
  {
    pattern: /\bRELIABILITY(?:\.md)?\b|\bARCHITECTURE\.md\b|\bDECISIONS(?:\.md|\s+D\d)|\bSTYLE\.md\b/,
    names: "the design notes",
  },
  { pattern: /(?:\.\.\/|\/work\/)shared\b|\bshared\/(?:spec|design|reference)\b/, names: "the shared folder" },
  {
    pattern: /\bthe original\b|\boriginal's\b|\boriginal\s+(?:daemon|watcher|CLI|implementation|encoder)\b/i,
    names: "the original",
  },
];

/** A page allowed to name the original daemon: the one that says why its shapes are kept. */
const MAY_NAME_THE_ORIGINAL = new Set(["docs/wire-compat.md"]);

/** The comment text of one TypeScript line: a comment line whole, else what follows ` //`. */
export function commentText(line: string): string {
  const trimmed = line.trimStart();
  if (trimmed.startsWith("*") || trimmed.startsWith("/*") || trimmed.startsWith("//")) return line;
  const trailing = line.search(/(?:^|[\s;,)}])\/\/\s/);
  return trailing < 0 ? "" : line.slice(trailing);
}

/** What a text cites outside the repository: one `names (phrase)` per kind of document, the first phrase found. */
export function outsideCitations(text: string, mayNameTheOriginal = false): string[] {
  const found = new Map<string, string>();
  for (const { pattern, names } of OUTSIDE) {
    if (found.has(names) || (mayNameTheOriginal && names === "the original")) continue;
    const phrase = text.match(pattern)?.[0];
    if (phrase !== undefined) found.set(names, `${names} (${phrase})`);
  }
  return [...found.values()];
}

/** Markdown without fenced code blocks (a shell example may print anything). */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, (block) => block.replace(/[^\n]/g, ""));
}

function sourceFiles(): string[] {
  return ["src", "workers"].flatMap((folder) => [
    ...new Bun.Glob(`${folder}/**/*.ts`).scanSync({ cwd: REPO_ROOT, onlyFiles: true }),
  ]);
}

function docPages(): string[] {
  const pages = [...new Bun.Glob("docs/*.md").scanSync({ cwd: REPO_ROOT, onlyFiles: true })];
  return ["README.md", ...pages.filter((page) => page !== "docs/decisions.md").sort()];
}

/** Every `file:line: what` that cites a document outside the repository. */
export function findOutsideCitations(): string[] {
  const found: string[] = [];
  for (const file of sourceFiles()) {
    readFileSync(join(REPO_ROOT, file), "utf8")
      .split("\n")
      .forEach((line, index) => {
        for (const what of outsideCitations(commentText(line))) found.push(`${file}:${index + 1}: ${what}`);
      });
  }
  for (const page of docPages()) {
    prose(readFileSync(join(REPO_ROOT, page), "utf8"))
      .split("\n")
      .forEach((line, index) => {
        for (const what of outsideCitations(line, MAY_NAME_THE_ORIGINAL.has(page)))
          found.push(`${page}:${index + 1}: ${what}`);
      });
  }
  return found;
}

/** Every `docs/<page>.md#<anchor>` (or bare `docs/<page>.md`) cited in src/ and workers/ that does not resolve. */
export function unresolvedDocCitations(): string[] {
  const anchors = new Map<string, Set<string> | null>();
  const anchorsFor = (page: string): Set<string> | null => {
    if (!anchors.has(page)) {
      const path = join(REPO_ROOT, page);
      anchors.set(page, existsSync(path) ? anchorsOf(readFileSync(path, "utf8")) : null);
    }
    return anchors.get(page) ?? null;
  };
  const broken: string[] = [];
  for (const file of sourceFiles()) {
    readFileSync(join(REPO_ROOT, file), "utf8")
      .split("\n")
      .forEach((line, index) => {
        for (const match of commentText(line).matchAll(/\bdocs\/([\w./-]+?\.md)(?:#([\w-]+))?/g)) {
          const page = `docs/${match[1]}`;
          const known = anchorsFor(page);
          if (known === null) broken.push(`${file}:${index + 1}: ${page} (no such page)`);
          else if (match[2] !== undefined && !known.has(match[2]))
            broken.push(`${file}:${index + 1}: ${page}#${match[2]} (no such heading)`);
        }
      });
  }
  return broken;
}
