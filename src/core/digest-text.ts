/**
 * The structural digest of text that is not JSON (D352): a table keeps its header and its first
 * and last rows around a count of the rows left out; a log collapses runs of lines that differ
 * only in their numbers into one line with a count, keeps its first and last lines and, between
 * them, the lines that mark a problem (error, warning, failure, panic), each gap counted. Long
 * lines are cut with a marker. Deterministic and pure.
 */

export interface LogLimits {
  head: number;
  tail: number;
  /** Problem lines kept from the middle. */
  marked: number;
  maxLine: number;
}

export const LOG_LEVELS: readonly LogLimits[] = [
  { head: 40, tail: 40, marked: 60, maxLine: 400 },
  { head: 20, tail: 20, marked: 30, maxLine: 240 },
  { head: 10, tail: 10, marked: 15, maxLine: 160 },
];

export interface TableLimits {
  head: number;
  tail: number;
  maxLine: number;
}

export const TABLE_LEVELS: readonly TableLimits[] = [
  { head: 20, tail: 5, maxLine: 400 },
  { head: 10, tail: 3, maxLine: 240 },
  { head: 5, tail: 2, maxLine: 160 },
];

/** What a log or table digest left out: the digest_meta of such a result. */
export interface TextElisions {
  lines: number;
  elided_lines: number;
  collapsed_runs: number;
  cut_lines: number;
}

const PROBLEM = /error|warn|fatal|fail|exception|panic|critical|traceback/i;

function cutLine(line: string, max: number, elisions: TextElisions): string {
  if (line.length <= max) return line;
  elisions.cut_lines++;
  return `${line.slice(0, max)}…[+${line.length - max} chars]`;
}

const isDigit = (code: number) => code >= 48 && code <= 57;

/** Two lines equal but for their runs of digits (times, ids, counters): compared in place, nothing allocated. */
export function sameShape(a: string, b: string): boolean {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(j);
    if (isDigit(x) && isDigit(y)) {
      while (i < a.length && isDigit(a.charCodeAt(i))) i++;
      while (j < b.length && isDigit(b.charCodeAt(j))) j++;
      continue;
    }
    if (x !== y) return false;
    i++;
    j++;
  }
  return i === a.length && j === b.length;
}

interface Run {
  line: string;
  count: number;
  /** The line marks a problem (kept from the middle of a long log); tested only when the middle is scanned. */
  problem?: boolean;
}

/** Consecutive lines of the same shape as one run (its first line and how many). */
function collapseRuns(lines: readonly string[]): Run[] {
  const runs: Run[] = [];
  let current: Run | undefined;
  for (const line of lines) {
    if (current !== undefined && (line === current.line || sameShape(line, current.line))) {
      current.count++;
      continue;
    }
    current = { line, count: 1 };
    runs.push(current);
  }
  return runs;
}

function runText(run: Run, limits: LogLimits, elisions: TextElisions): string {
  const line = cutLine(run.line, limits.maxLine, elisions);
  return run.count === 1 ? line : `${line} …[×${run.count} similar lines]`;
}

function gap(count: number): string {
  return `…[${count} lines elided]`;
}

function logAt(lines: number, runs: readonly Run[], limits: LogLimits): { text: string; elisions: TextElisions } {
  const elisions: TextElisions = { lines, elided_lines: 0, collapsed_runs: 0, cut_lines: 0 };
  for (const run of runs) if (run.count > 1) elisions.collapsed_runs++;
  const out: string[] = [];
  const lineCount = (from: number, to: number) => {
    let total = 0;
    for (let i = from; i < to; i++) total += (runs[i] as Run).count;
    return total;
  };
  if (runs.length <= limits.head + limits.tail + 1) {
    for (const run of runs) out.push(runText(run, limits, elisions));
    return { text: out.join("\n"), elisions };
  }
  for (let i = 0; i < limits.head; i++) out.push(runText(runs[i] as Run, limits, elisions));
  const middleEnd = runs.length - limits.tail;
  let marked = 0;
  let gapFrom = limits.head;
  for (let i = limits.head; i < middleEnd && marked < limits.marked; i++) {
    const run = runs[i] as Run;
    run.problem ??= PROBLEM.test(run.line);
    if (!run.problem) continue;
    if (i > gapFrom) {
      const skipped = lineCount(gapFrom, i);
      elisions.elided_lines += skipped;
      out.push(gap(skipped));
    }
    out.push(runText(run, limits, elisions));
    marked++;
    gapFrom = i + 1;
  }
  if (middleEnd > gapFrom) {
    const skipped = lineCount(gapFrom, middleEnd);
    elisions.elided_lines += skipped;
    out.push(marked === limits.marked ? `${gap(skipped)} (further problem lines among them)` : gap(skipped));
  }
  for (let i = middleEnd; i < runs.length; i++) out.push(runText(runs[i] as Run, limits, elisions));
  return { text: out.join("\n"), elisions };
}

function tableAt(lines: readonly string[], header: number, limits: TableLimits) {
  const elisions: TextElisions = { lines: lines.length, elided_lines: 0, collapsed_runs: 0, cut_lines: 0 };
  const cut = (line: string) => cutLine(line, limits.maxLine, elisions);
  const rows = lines.length - header;
  if (rows <= limits.head + limits.tail + 1) return { text: lines.map(cut).join("\n"), elisions };
  const elided = rows - limits.head - limits.tail;
  elisions.elided_lines = elided;
  const text = [
    ...lines.slice(0, header + limits.head).map(cut),
    `…[${elided} rows elided of ${rows}]`,
    ...lines.slice(lines.length - limits.tail).map(cut),
  ].join("\n");
  return { text, elisions };
}

/** The separator count of a line for one column separator. */
function columns(line: string, separator: string): number {
  let count = 0;
  for (let at = line.indexOf(separator); at !== -1; at = line.indexOf(separator, at + 1)) count++;
  return count;
}

/**
 * How many header lines the text's table has, when its first lines are a table: at least 80% of
 * the first 40 lines have the same number (2 or more) of `|` or tab separators, or 3 or more
 * commas. A Markdown rule under the header counts as header.
 */
export function tableHeader(lines: readonly string[]): number | undefined {
  const sample = lines.slice(0, 40).filter((line) => line.trim() !== "");
  if (sample.length < 5) return undefined;
  for (const [separator, least] of [
    ["|", 2],
    ["\t", 2],
    [",", 3],
  ] as const) {
    const first = columns(sample[0] as string, separator);
    if (first < least) continue;
    const same = sample.filter((line) => columns(line, separator) === first).length;
    if (same >= sample.length * 0.8) return /^\s*\|?\s*:?-{3,}/.test(lines[1] ?? "") ? 2 : 1;
  }
  return undefined;
}

export interface TextDigest {
  text: string;
  elisions: TextElisions;
  level: number;
}

function fitted<L>(
  levels: readonly L[],
  budgetChars: number,
  make: (limits: L) => { text: string; elisions: TextElisions },
): TextDigest {
  let digest: TextDigest | undefined;
  for (let level = 0; level < levels.length; level++) {
    digest = { ...make(levels[level] as L), level };
    if (digest.text.length <= budgetChars) break;
  }
  return digest as TextDigest;
}

/** A log's digest: the first level whose text fits `budgetChars`, else the last level's. */
export function digestLog(lines: readonly string[], budgetChars: number): TextDigest {
  const runs = collapseRuns(lines);
  return fitted(LOG_LEVELS, budgetChars, (limits) => logAt(lines.length, runs, limits));
}

/** A table's digest (`header` lines kept whole): the first level that fits, else the last. */
export function digestTable(lines: readonly string[], header: number, budgetChars: number): TextDigest {
  return fitted(TABLE_LEVELS, budgetChars, (limits) => tableAt(lines, header, limits));
}
