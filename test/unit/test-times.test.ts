/**
 * scripts/test-times.ts, the suite's cost that .ci/run prints: each file's time from bun test's
 * JUnit report (the outermost testsuites only), the folders they count under (test/<folder>, and
 * test/integration/<role>), and the report's lines.
 */
import { expect, test } from "bun:test";
import { fileTimes, folderOf, folderTimes, runTime, timingReport } from "../../scripts/test-times.ts";

const REPORT = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="bun test" tests="4" assertions="9" failures="0" skipped="0" time="12.5">
  <testsuite name="test/unit/a.test.ts" file="test/unit/a.test.ts" tests="2" time="0.5" hostname="vm">
    <testsuite name="nested" file="test/unit/a.test.ts" line="3" tests="2" time="0" hostname="vm">
      <testcase name="one" classname="nested" time="0.1" file="test/unit/a.test.ts" line="4" assertions="1" />
    </testsuite>
  </testsuite>
  <testsuite name="test/unit/store/b.test.ts" file="test/unit/store/b.test.ts" tests="1" time="1.5" hostname="vm">
    <testcase name="two" classname="" time="1.4" file="test/unit/store/b.test.ts" line="4" assertions="1" />
  </testsuite>
  <testsuite name="test/integration/svc/c.test.ts" file="test/integration/svc/c.test.ts" tests="1" time="9.25" hostname="vm">
    <testcase name="three" classname="" time="9" file="test/integration/svc/c.test.ts" line="4" assertions="1" />
  </testsuite>
  <testsuite name="test/architecture.test.ts" file="test/architecture.test.ts" tests="0" time="0.25" hostname="vm" />
</testsuites>
`;

test("each file's time is its outermost testsuite's; a describe inside is not a file", () => {
  expect(fileTimes(REPORT)).toEqual([
    { file: "test/unit/a.test.ts", seconds: 0.5 },
    { file: "test/unit/store/b.test.ts", seconds: 1.5 },
    { file: "test/integration/svc/c.test.ts", seconds: 9.25 },
    { file: "test/architecture.test.ts", seconds: 0.25 },
  ]);
  expect(runTime(REPORT)).toBe(12.5);
  expect(runTime("<testsuites>")).toBeUndefined();
});

test("a file counts under test/<folder>, an integration test under its role's folder, a top-level one under test", () => {
  expect(folderOf("test/unit/store/b.test.ts")).toBe("test/unit");
  expect(folderOf("test/integration/svc/c.test.ts")).toBe("test/integration/svc");
  expect(folderOf("test/security/x.test.ts")).toBe("test/security");
  expect(folderOf("test/architecture.test.ts")).toBe("test");
  expect(folderTimes(fileTimes(REPORT))).toEqual([
    { folder: "test/integration/svc", seconds: 9.25, files: 1 },
    { folder: "test/unit", seconds: 2, files: 2 },
    { folder: "test", seconds: 0.25, files: 1 },
  ]);
});

test("the report: folders slowest first, then the slowest files, then the totals", () => {
  expect(timingReport(fileTimes(REPORT), runTime(REPORT))).toEqual([
    "suite time per folder (seconds, files):",
    "    9.3    1  test/integration/svc",
    "    2.0    2  test/unit",
    "    0.3    1  test",
    "ten slowest files (seconds):",
    "    9.3  test/integration/svc/c.test.ts",
    "    1.5  test/unit/store/b.test.ts",
    "    0.5  test/unit/a.test.ts",
    "    0.3  test/architecture.test.ts",
    "files: 4, their times summed: 11.5 s, the run: 12.5 s",
  ]);
});
