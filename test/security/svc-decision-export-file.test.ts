/**
 * The decision export's `--out` file (issue 16 item 7): it names tool arguments verbatim and, with
 * `--include-approver`, the people who approved, so it must be owner-only from its first byte and
 * must never be written through a link someone planted at the path.
 */
import { expect, test } from "bun:test";
import { lstatSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { writePrivateFile } from "../../src/fs/private-files.ts";
import { tempDir } from "../support/daemon.ts";

test("an existing world-readable file at --out is replaced by a 0600 one", () => {
  const out = join(tempDir("spar-export-sec-"), "decisions.jsonl");
  writeFileSync(out, "old", { mode: 0o644 });
  writePrivateFile(out, "{}\n");
  expect(statSync(out).mode & 0o777).toBe(0o600);
  expect(readFileSync(out, "utf8")).toBe("{}\n");
});

test("a symlink planted at --out is replaced; the file it pointed to is left untouched", () => {
  const directory = tempDir("spar-export-sec-");
  const victim = join(directory, "victim.txt");
  writeFileSync(victim, "keep me", { mode: 0o644 });
  const out = join(directory, "decisions.jsonl");
  symlinkSync(victim, out);
  writePrivateFile(out, "{}\n");
  expect(readFileSync(victim, "utf8")).toBe("keep me");
  expect(statSync(victim).mode & 0o777).toBe(0o644);
  expect(lstatSync(out).isSymbolicLink()).toBe(false);
  expect(statSync(out).mode & 0o777).toBe(0o600);
});

test("a restrictive umask cannot leave the file unreadable to its owner or readable to others", () => {
  const out = join(tempDir("spar-export-sec-"), "decisions.jsonl");
  const previous = process.umask(0o277);
  try {
    writePrivateFile(out, "{}\n");
  } finally {
    process.umask(previous);
  }
  expect(statSync(out).mode & 0o777).toBe(0o600);
});
