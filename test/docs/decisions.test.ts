/**
 * docs/decisions.md holds every settled decision, D1 on, and an index at the top. Every decision
 * number cited anywhere in the repository's code, tests, scripts, benches and docs (`D164`,
 * `(D32)`, `D169-D171`) must resolve to an entry; the index must list every entry exactly once,
 * each row's anchor must name its entry, and a status may only point at later entries that exist.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";

const REPO_ROOT = resolve(import.meta.dir, "..", "..");
const DECISIONS = join(REPO_ROOT, "docs", "decisions.md");

/** Where decisions are cited: these folders (every text file) and the README. */
const CITING_FOLDERS = ["src", "workers", "test", "scripts", "bench", "docs"];
const CITING_FILES = ["README.md"];
const TEXT_FILE = /\.(ts|md|json|jsonl|ya?ml|sh|txt)$|^scripts\/[^/.]+$/;

/** Every decision number a text cites: single numbers, and both ends of a range (`D169-D171`, `D169-171`). */
export function citedDecisions(text: string): number[] {
  const cited: number[] = [];
  for (const match of text.matchAll(/\bD(\d{1,4})\b(?:\s*[-–]\s*D?(\d{1,4})\b)?/g)) {
    cited.push(Number(match[1]));
    if (match[2] !== undefined) cited.push(Number(match[2]));
  }
  return cited;
}

interface Entry {
  number: number;
  anchor: string | undefined;
}

/** The entries: list items opening with the bold `**D<n>. ...**`, with their `<a id>` anchor. */
export function decisionEntries(markdown: string): Entry[] {
  return [...markdown.matchAll(/^- (?:<a id="([^"]+)"><\/a>)?\*\*D(\d+)\./gm)].map((match) => ({
    number: Number(match[2]),
    anchor: match[1],
  }));
}

interface IndexRow {
  number: number;
  anchor: string;
  status: string;
}

/** The index table's rows: `| [D<n>](#d<n>) | title | area | status |`. */
export function indexRows(markdown: string): IndexRow[] {
  return [...markdown.matchAll(/^\| \[D(\d+)\]\(#([^)]+)\) \|.*\| ([^|]*) \|$/gm)].map((match) => ({
    number: Number(match[1]),
    anchor: match[2] ?? "",
    status: (match[3] ?? "").trim(),
  }));
}

function citingFiles(): string[] {
  const files = CITING_FOLDERS.flatMap((folder) =>
    [...new Bun.Glob(`${folder}/**/*`).scanSync({ cwd: REPO_ROOT, onlyFiles: true })].filter((path) =>
      TEXT_FILE.test(path),
    ),
  );
  return [...files, ...CITING_FILES].filter((path) => statSync(join(REPO_ROOT, path)).size < 2_000_000).sort();
}

const markdown = readFileSync(DECISIONS, "utf8");
const entries = decisionEntries(markdown);
const numbers = new Set(entries.map((entry) => entry.number));

describe("the citation scanner", () => {
  test("finds single numbers, parenthesised ones and both ends of a range", () => {
    expect(citedDecisions("see D164 and (D32); D169-D171, D100-107, D5.")).toEqual([164, 32, 169, 171, 100, 107, 5]);
  });

  test("ignores letters glued to the number and the placeholder D?", () => {
    expect(citedDecisions("0xD8 3D2 ID12 D? DECISIONS D12a")).toEqual([]);
  });
});

describe("docs/decisions.md", () => {
  test("has entries from D1 on, each number once, each with its own anchor", () => {
    expect(entries.length).toBeGreaterThan(150);
    expect(numbers.has(1)).toBe(true);
    expect(entries.length).toBe(numbers.size);
    expect(entries.filter((entry) => entry.anchor !== `d${entry.number}`).map((entry) => entry.number)).toEqual([]);
  });

  test("every decision number cited in src, workers, test, scripts, bench, README.md and docs resolves to an entry", () => {
    const files = citingFiles();
    expect(files).toContain("src/main.ts");
    expect(files).toContain("README.md");
    const unresolved: string[] = [];
    for (const file of files) {
      const text = readFileSync(join(REPO_ROOT, file), "utf8");
      for (const number of citedDecisions(text)) if (!numbers.has(number)) unresolved.push(`${file}: D${number}`);
    }
    expect(unresolved).toEqual([]);
  });

  test("the index lists every entry exactly once, linking its anchor", () => {
    const rows = indexRows(markdown);
    const counts = new Map<number, number>();
    for (const row of rows) counts.set(row.number, (counts.get(row.number) ?? 0) + 1);
    expect([...numbers].filter((number) => counts.get(number) !== 1).map((number) => `D${number}`)).toEqual([]);
    expect(rows.filter((row) => !numbers.has(row.number)).map((row) => `D${row.number}`)).toEqual([]);
    expect(rows.filter((row) => row.anchor !== `d${row.number}`).map((row) => `D${row.number}`)).toEqual([]);
  });

  test("each status is active, or amended or superseded by later entries that exist", () => {
    const bad: string[] = [];
    for (const row of indexRows(markdown)) {
      if (row.status === "active") continue;
      const match = /^(amended|superseded) by (.+)$/.exec(row.status);
      const later = match ? [...(match[2] ?? "").matchAll(/\[D(\d+)\]\(#d(\d+)\)/g)] : [];
      const valid =
        later.length > 0 &&
        later.every((link) => {
          const number = Number(link[1]);
          return link[1] === link[2] && numbers.has(number) && number > row.number;
        });
      if (!valid) bad.push(`D${row.number}: ${row.status}`);
    }
    expect(bad).toEqual([]);
  });

  test("points at nothing outside the repository", () => {
    expect(markdown).not.toMatch(/\]\(\.\.\/|`\.\.\/(shared|spec|reference)/);
  });
});
