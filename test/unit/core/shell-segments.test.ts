/** shellSegments: control operators split, quotes and redirections do not, hidden commands refuse. */
import { expect, test } from "bun:test";
import { shellSegments } from "../../../src/core/shell-segments.ts";

test("control operators split a line into its simple commands", () => {
  expect(shellSegments("echo hi")).toEqual(["echo hi"]);
  expect(shellSegments("echo hi; touch pwned")).toEqual(["echo hi", "touch pwned"]);
  expect(shellSegments("git add . && git commit -m x || echo failed")).toEqual([
    "git add .",
    "git commit -m x",
    "echo failed",
  ]);
  expect(shellSegments("ls | grep a & sleep 1\nrm -rf x")).toEqual(["ls", "grep a", "sleep 1", "rm -rf x"]);
});

test("quotes, escapes and redirections stay inside their command", () => {
  expect(shellSegments(`git commit -m "a; b && c" | tee log`)).toEqual([`git commit -m "a; b && c"`, "tee log"]);
  expect(shellSegments("echo 'x | y'; echo z")).toEqual(["echo 'x | y'", "echo z"]);
  expect(shellSegments("echo a\\;b")).toEqual(["echo a\\;b"]);
  expect(shellSegments("make 2>&1 | tail -5")).toEqual(["make 2>&1", "tail -5"]);
  expect(shellSegments("make &> build.log")).toEqual(["make &> build.log"]);
  expect(shellSegments("echo '$(not run)'")).toEqual(["echo '$(not run)'"]);
});

test("lines that hide commands cannot be read off", () => {
  for (const line of [
    "echo $(rm -rf ~)",
    "echo `id`",
    'echo "$(id)"',
    "(cd /; rm -rf x)",
    "{ rm -rf x; }",
    "diff <(ls a) <(ls b)",
    "cat <<EOF\nx\nEOF",
    "echo 'unterminated",
  ]) {
    expect(shellSegments(line)).toBeUndefined();
  }
});
