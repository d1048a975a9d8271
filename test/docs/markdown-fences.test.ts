/**
 * Code fences in README.md and every docs/ page (docs/decisions/ included) close cleanly: a fence
 * line inside a code block that carries text after its backticks is not a closing fence
 * (CommonMark), so the block runs on and the prose after it renders as code. Every block must also
 * close before the page ends.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const REPO_ROOT = resolve(import.meta.dir, "..", "..");

function pages(): string[] {
  const docs = [...new Bun.Glob("docs/**/*.md").scanSync({ cwd: REPO_ROOT, onlyFiles: true })];
  return ["README.md", ...docs.sort()];
}

/** `page:line: why` for each fence that does not close as its writer meant. */
export function fenceProblems(page: string, markdown: string): string[] {
  const problems: string[] = [];
  let open: { marker: string; line: number } | undefined;
  markdown.split("\n").forEach((text, index) => {
    const fence = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(text);
    if (!fence) return;
    const [, marker = "", rest = ""] = fence;
    if (open === undefined) {
      open = { marker, line: index + 1 };
      return;
    }
    if (marker[0] !== open.marker[0] || marker.length < open.marker.length) return;
    if (rest.trim() === "") open = undefined;
    else
      problems.push(`${page}:${index + 1}: text after a closing fence (the block opened at line ${open.line} runs on)`);
  });
  if (open !== undefined) problems.push(`${page}:${open.line}: a code block that never closes`);
  return problems;
}

describe("code fences", () => {
  test("the checker finds text after a closing fence and a block left open", () => {
    expect(fenceProblems("x.md", "```sh\nls\n``` and then prose\n\nmore\n```\n")).toEqual([
      "x.md:3: text after a closing fence (the block opened at line 1 runs on)",
    ]);
    expect(fenceProblems("y.md", "text\n```json\n{}\n")).toEqual(["y.md:2: a code block that never closes"]);
    expect(fenceProblems("z.md", "````md\n```sh\nls\n```\n````\n")).toEqual([]);
  });

  test("every block in README.md and docs/**/*.md closes with a bare fence", () => {
    const problems = pages().flatMap((page) => fenceProblems(page, readFileSync(join(REPO_ROOT, page), "utf8")));
    expect(problems).toEqual([]);
  });
});
