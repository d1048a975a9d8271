/**
 * The suite's cost, from bun test's JUnit report (`--reporter=junit --reporter-outfile=FILE`): the
 * wall time per test folder (test/<folder>, and test/integration/<role>) and the ten slowest files.
 * A file's time is bun's for the whole file: loading it, its hooks and its tests. .ci/run prints
 * this before its last line; docs/testing.md records a run's numbers.
 * Usage: bun scripts/test-times.ts REPORT.xml
 */
import { readFileSync } from "node:fs";

export interface FileTime {
  file: string;
  seconds: number;
}

export interface FolderTime {
  folder: string;
  seconds: number;
  files: number;
}

function attribute(tag: string, name: string): string | undefined {
  return new RegExp(`\\s${name}="([^"]*)"`).exec(tag)?.[1];
}

/** Each test file's time: the report's outermost `<testsuite>` elements (the nested ones are describes). */
export function fileTimes(xml: string): FileTime[] {
  const files: FileTime[] = [];
  let depth = 0;
  for (const match of xml.matchAll(/<testsuite\b[^>]*>|<\/testsuite>/g)) {
    const tag = match[0];
    if (tag === "</testsuite>") {
      depth--;
      continue;
    }
    if (depth === 0) {
      const file = attribute(tag, "file") ?? attribute(tag, "name") ?? "?";
      files.push({ file, seconds: Number(attribute(tag, "time") ?? 0) });
    }
    if (!tag.endsWith("/>")) depth++;
  }
  return files;
}

/** The whole run's time as the report states it (undefined when it does not). */
export function runTime(xml: string): number | undefined {
  const tag = /<testsuites\b[^>]*>/.exec(xml)?.[0];
  const time = tag === undefined ? undefined : attribute(tag, "time");
  return time === undefined ? undefined : Number(time);
}

/** The folder a file counts under: test/<folder>, or test/integration/<role>; files at test/'s top count as test. */
export function folderOf(file: string): string {
  const parts = file.split("/");
  const depth = parts[1] === "integration" ? 3 : 2;
  return parts.length > depth ? parts.slice(0, depth).join("/") : parts.slice(0, -1).join("/") || ".";
}

/** Per folder: the summed time and the number of files, slowest first. */
export function folderTimes(files: FileTime[]): FolderTime[] {
  const folders = new Map<string, FolderTime>();
  for (const { file, seconds } of files) {
    const folder = folderOf(file);
    const entry = folders.get(folder) ?? { folder, seconds: 0, files: 0 };
    entry.seconds += seconds;
    entry.files++;
    folders.set(folder, entry);
  }
  return [...folders.values()].sort((a, b) => b.seconds - a.seconds || a.folder.localeCompare(b.folder));
}

const seconds = (value: number) => value.toFixed(1).padStart(7);

/** The lines .ci/run prints: folders, the ten slowest files, the totals. */
export function timingReport(files: FileTime[], wall?: number): string[] {
  const slowest = [...files].sort((a, b) => b.seconds - a.seconds).slice(0, 10);
  const sum = files.reduce((total, file) => total + file.seconds, 0);
  return [
    "suite time per folder (seconds, files):",
    ...folderTimes(files).map(
      (entry) => `${seconds(entry.seconds)}  ${String(entry.files).padStart(3)}  ${entry.folder}`,
    ),
    "ten slowest files (seconds):",
    ...slowest.map((file) => `${seconds(file.seconds)}  ${file.file}`),
    `files: ${files.length}, their times summed: ${sum.toFixed(1)} s${wall === undefined ? "" : `, the run: ${wall.toFixed(1)} s`}`,
  ];
}

if (import.meta.main) {
  const path = process.argv[2];
  if (path === undefined) {
    process.stderr.write("usage: bun scripts/test-times.ts REPORT.xml\n");
    process.exit(2);
  }
  const xml = readFileSync(path, "utf8");
  process.stdout.write(`${timingReport(fileTimes(xml), runTime(xml)).join("\n")}\n`);
}
