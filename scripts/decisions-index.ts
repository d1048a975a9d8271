/**
 * The decision record: docs/decisions/<area>.md hold the entries, one file per area (D344), and
 * docs/decisions.md is their index, rendered here from those files. Owns the area file's format:
 * a `# Title` line, a paragraph on what the area covers, then entries in number order, each a list
 * item `- <a id="dN"></a>**DN. Title.** text` (continuation lines indented two spaces), a status
 * line `*Amended by [DX](file.md#dx), ...*` or `*Superseded by ...*` under an entry a later one
 * changed, and the superseded entries last, under `## Superseded`. test/docs/decisions.test.ts
 * fails when the index differs from what this renders or when an area file breaks the format.
 * Reads the area files; writes nothing but docs/decisions.md.
 *
 * Usage: bun scripts/decisions-index.ts           rewrite docs/decisions.md
 *        bun scripts/decisions-index.ts --check   exit 1 when docs/decisions.md is stale
 */
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const REPO_ROOT = resolve(import.meta.dir, "..");
export const DECISIONS_INDEX_PATH = join(REPO_ROOT, "docs", "decisions.md");
export const DECISIONS_DIR = join(REPO_ROOT, "docs", "decisions");

export const SUPERSEDED_HEADING = "## Superseded";

export interface StatusLink {
  number: number;
  /** The link's target as written, `#d53` or `event-stream.md#d53`. */
  target: string;
}

export interface DecisionEntry {
  number: number;
  /** The `<a id>` the entry opens with. */
  anchor: string;
  /** The bold title, whitespace collapsed, its closing period dropped. */
  title: string;
  status: "active" | "amended" | "superseded";
  /** The later entries the status line names (empty when active). */
  by: StatusLink[];
  /** Whether the entry sits under the file's `## Superseded` heading. */
  inSupersededGroup: boolean;
}

export interface DecisionArea {
  /** The file's name inside docs/decisions/, `store.md`. */
  file: string;
  /** The `# Title` line's text. */
  title: string;
  entries: DecisionEntry[];
  /** Lines that break the format, as `<file>:<line>: why`. */
  problems: string[];
}

const ENTRY_OPEN = /^- <a id="([^"]+)"><\/a>\*\*D(\d+)\. /;
const STATUS_LINE = /^ {2}\*(Amended|Superseded) by (.+)\.\*$/;
const STATUS_LINK = /^\[D(\d+)\]\(([^)\s]+)\)$/;

/** The status line's links, or undefined when the list is not `[DX](target), [DY](target)`. */
function statusLinks(list: string): StatusLink[] | undefined {
  const links: StatusLink[] = [];
  for (const part of list.split(", ")) {
    const match = STATUS_LINK.exec(part);
    if (!match) return undefined;
    links.push({ number: Number(match[1]), target: match[2] ?? "" });
  }
  return links;
}

/** One entry from its lines (the opening line first, trailing blank lines dropped). */
function parseEntry(lines: string[], inSupersededGroup: boolean, where: string, problems: string[]): DecisionEntry {
  const open = ENTRY_OPEN.exec(lines[0] ?? "");
  const number = Number(open?.[2]);
  const text = lines.join("\n");
  const bold = /\*\*D\d+\. ([\s\S]*?)\*\*/.exec(text)?.[1] ?? "";
  const title = bold.replace(/\s+/g, " ").trim().replace(/\.$/, "");
  const entry: DecisionEntry = {
    number,
    anchor: open?.[1] ?? "",
    title,
    status: "active",
    by: [],
    inSupersededGroup,
  };
  if (title === "") problems.push(`${where}: D${number} has no bold title`);
  for (const line of lines.slice(1)) {
    const status = STATUS_LINE.exec(line);
    if (!status) {
      if (/^ {2}\*(Amended|Superseded)\b/i.test(line)) problems.push(`${where}: D${number}: malformed status line`);
      continue;
    }
    const links = statusLinks(status[2] ?? "");
    if (links === undefined || entry.status !== "active") {
      problems.push(`${where}: D${number}: malformed or repeated status line`);
      continue;
    }
    entry.status = status[1] === "Amended" ? "amended" : "superseded";
    entry.by = links;
  }
  return entry;
}

/** Problems of one file's shape: anchors, number order, and the Superseded group holding exactly the superseded. */
function shapeProblems(file: string, entries: DecisionEntry[]): string[] {
  const problems: string[] = [];
  let previous: DecisionEntry | undefined;
  for (const entry of entries) {
    if (entry.anchor !== `d${entry.number}`)
      problems.push(`${file}: D${entry.number} opens with anchor "${entry.anchor}", not "d${entry.number}"`);
    if (previous && previous.inSupersededGroup === entry.inSupersededGroup && previous.number >= entry.number)
      problems.push(`${file}: D${entry.number} follows D${previous.number}: entries go in number order`);
    if ((entry.status === "superseded") !== entry.inSupersededGroup)
      problems.push(
        entry.inSupersededGroup
          ? `${file}: D${entry.number} is under ${SUPERSEDED_HEADING} but not superseded`
          : `${file}: D${entry.number} is superseded but not under ${SUPERSEDED_HEADING}`,
      );
    previous = entry;
  }
  return problems;
}

/** Parses one area file. Anything but the title, the opening prose, entries and the Superseded heading is a problem. */
export function parseAreaFile(file: string, markdown: string): DecisionArea {
  const lines = markdown.split("\n");
  const problems: string[] = [];
  const title = /^# (.+)$/.exec(lines[0] ?? "")?.[1]?.trim() ?? "";
  if (title === "") problems.push(`${file}:1: an area file opens with its "# Title" line`);
  const entries: DecisionEntry[] = [];
  let current: { lines: string[]; start: number } | undefined;
  let inSuperseded = false;
  const close = () => {
    if (!current) return;
    while (current.lines.at(-1) === "") current.lines.pop();
    entries.push(parseEntry(current.lines, inSuperseded, `${file}:${current.start}`, problems));
    current = undefined;
  };
  lines.slice(1).forEach((line, index) => {
    const lineNumber = index + 2;
    if (ENTRY_OPEN.test(line)) {
      close();
      current = { lines: [line], start: lineNumber };
    } else if (current && (line === "" || line.startsWith("  "))) current.lines.push(line);
    else if (line === SUPERSEDED_HEADING && !inSuperseded) {
      close();
      inSuperseded = true;
    } else if (line.trim() !== "" && (entries.length > 0 || current || inSuperseded || line.startsWith("#")))
      problems.push(`${file}:${lineNumber}: stray line outside an entry: ${line.slice(0, 60)}`);
  });
  close();
  return { file, title, entries, problems: [...problems, ...shapeProblems(file, entries)] };
}

function stem(file: string): string {
  return file.replace(/\.md$/, "");
}

/** Every area file of docs/decisions/, in file-name order (`workflow-daemon` before `workflow-daemon-dispatch`). */
export function readDecisionAreas(dir: string = DECISIONS_DIR): DecisionArea[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith(".md"))
    .sort((a, b) => stem(a).localeCompare(stem(b)))
    .map((name) => parseAreaFile(name, readFileSync(join(dir, name), "utf8")));
}

/** Problems across the files: a number with two entries, a status naming a missing or earlier entry or the wrong file. */
export function recordProblems(areas: readonly DecisionArea[]): string[] {
  const problems = areas.flatMap((area) => area.problems);
  const home = new Map<number, string>();
  for (const area of areas)
    for (const entry of area.entries) {
      const other = home.get(entry.number);
      if (other !== undefined) problems.push(`D${entry.number} has an entry in ${other} and in ${area.file}`);
      else home.set(entry.number, area.file);
    }
  for (const area of areas)
    for (const entry of area.entries)
      for (const link of entry.by) {
        const file = home.get(link.number);
        const expected = file === area.file ? `#d${link.number}` : `${file}#d${link.number}`;
        if (file === undefined)
          problems.push(`${area.file}: D${entry.number}'s status names D${link.number}, no entry`);
        else if (link.number <= entry.number)
          problems.push(`${area.file}: D${entry.number}'s status names D${link.number}, not a later entry`);
        else if (link.target !== expected)
          problems.push(
            `${area.file}: D${entry.number}'s status links D${link.number} as ${link.target}, not ${expected}`,
          );
      }
  return problems;
}

interface Located {
  entry: DecisionEntry;
  area: DecisionArea;
}

function located(areas: readonly DecisionArea[]): Located[] {
  return areas
    .flatMap((area) => area.entries.map((entry) => ({ entry, area })))
    .sort((a, b) => a.entry.number - b.entry.number);
}

function cell(text: string): string {
  return text.replace(/\|/g, "\\|");
}

function statusCell(entry: DecisionEntry, fileOf: Map<number, string>): string {
  if (entry.status === "active") return "active";
  const links = entry.by.map((link) => `[D${link.number}](decisions/${fileOf.get(link.number)}#d${link.number})`);
  return `${entry.status} by ${links.join(", ")}`;
}

function areaRows(areas: readonly DecisionArea[]): string[] {
  return areas.map((area) => {
    const superseded = area.entries.filter((entry) => entry.status === "superseded").length;
    return `| [${cell(area.title)}](decisions/${area.file}) | ${area.entries.length} | ${superseded} |`;
  });
}

function indexRows(areas: readonly DecisionArea[]): string[] {
  const all = located(areas);
  const fileOf = new Map(all.map(({ entry, area }) => [entry.number, area.file]));
  return all.map(({ entry, area }) => {
    const link = `<a id="d${entry.number}"></a>[D${entry.number}](decisions/${area.file}#d${entry.number})`;
    return `| ${link} | ${cell(entry.title)} | ${stem(area.file)} | ${statusCell(entry, fileOf)} |`;
  });
}

/** The whole of docs/decisions.md. */
export function renderDecisionsIndex(areas: readonly DecisionArea[]): string {
  const numbers = areas.flatMap((area) => area.entries.map((entry) => entry.number));
  const next = Math.max(0, ...numbers) + 1;
  const lines = [
    "# Decisions",
    "",
    "<!-- Generated by `bun scripts/decisions-index.ts` from docs/decisions/*.md; do not edit by hand.",
    "     test/docs/decisions.test.ts fails when this file is not what the script renders. -->",
    "",
    "The points the specs leave open (the attach-daemon, workflow-daemon and cluster-watcher specs,",
    "which are not part of this repository), settled in code and numbered from D1. D1-D25 were settled",
    "before building and are the contract the rest builds on; D26 on were settled while building, each",
    "naming where it lives. How the parts fit together: [architecture.md](architecture.md).",
    "",
    "Each entry lives in the file of its area under `docs/decisions/`, in number order. A later",
    'decision that changes an earlier one says so ("amends D31", "replaces D78"), and the earlier entry',
    "carries a line naming it: *Amended by* (the entry holds, with the later ones' changes) or",
    "*Superseded by* (read the later one instead). Superseded entries sit together at the end of their",
    "area's file, under Superseded. This page is generated from the area files: the areas, then every",
    "entry with its area and status.",
    "",
    "## Adding a decision",
    "",
    `1. Take the next free number: ${next}.`,
    "2. Add the entry at the end of its area's list (above `## Superseded`) as",
    '   `- <a id="dN"></a>**DN. Title.** Text`, its further lines indented two spaces, a blank line',
    "   between entries. A subject no area covers gets a new file: a `# Title` line, a paragraph on",
    "   what the area covers, then its entries.",
    "3. If it amends or replaces earlier entries, say so in its text, and give each earlier entry the",
    "   line (indented two spaces, after a blank line) `*Amended by [DN](area.md#dN).*`, or",
    "   `*Superseded by [DN](area.md#dN).*`, adding to the list when it has one (`[DX](#dx), [DN](#dN)`",
    "   within one file). A superseded entry moves under its file's `## Superseded`.",
    "4. Run `bun scripts/decisions-index.ts` to rewrite this page (`--check` only reports a stale one).",
    "   Cite the decision as `DN` in code and comments; link it from a doc as `decisions/<area>.md#dN`.",
    "",
    "`test/docs/decisions.test.ts` fails when a decision number cited in the code or the docs has no",
    "entry or two, when a status names a missing or earlier entry, when a superseded entry sits outside",
    "its file's Superseded group (or an active one inside it), or when this page is stale;",
    "`test/docs/links.test.ts` fails on a link to an entry that is not where the link says.",
    "",
    "## Areas",
    "",
    "| area | entries | superseded |",
    "|---|---|---|",
    ...areaRows(areas),
    "",
    "## Index",
    "",
    "Every entry by number, linked to its place in its area's file (the area column names the file).",
    "A row's anchor keeps a link to `decisions.md#dN`, made before the areas had files of their own,",
    "one click from its entry.",
    "",
    "| # | decision | area | status |",
    "|---|---|---|---|",
    ...indexRows(areas),
  ];
  return `${lines.join("\n")}\n`;
}

if (import.meta.main) {
  const areas = readDecisionAreas();
  const problems = recordProblems(areas);
  if (problems.length > 0) {
    process.stderr.write(`docs/decisions/ breaks the record's format:\n${problems.join("\n")}\n`);
    process.exit(1);
  }
  const rendered = renderDecisionsIndex(areas);
  if (process.argv.includes("--check")) {
    if (readFileSync(DECISIONS_INDEX_PATH, "utf8") !== rendered) {
      process.stderr.write("docs/decisions.md is stale: run bun scripts/decisions-index.ts\n");
      process.exit(1);
    }
  } else {
    writeFileSync(DECISIONS_INDEX_PATH, rendered);
    process.stdout.write(`wrote ${DECISIONS_INDEX_PATH}\n`);
  }
}
