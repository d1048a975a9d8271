/**
 * PlanFiles (D358): a session's plans in its own owner-only directory, the active one the highest
 * seq (numerically), archiving into `archive/` without overwriting, numbering past archived plans.
 */
import { expect, test } from "bun:test";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PlanFiles } from "../../../src/plans/plan-files.ts";
import { tempDir } from "../../support/daemon.ts";

test("the active plan is the highest seq; archive moves it aside; nothing active answers undefined", () => {
  const root = join(tempDir(), "plans");
  const plans = new PlanFiles(root);
  expect(plans.active("s1")).toBeUndefined();
  expect(plans.archiveActive("s1")).toBeUndefined();
  expect(existsSync(root)).toBe(false);
  for (let seq = 1; seq <= 10; seq++) plans.write("s1", `# plan ${seq}\n`);
  writeFileSync(join(root, "s1", "notes.md"), "not a plan");
  expect(plans.active("s1")?.path).toBe(join(root, "s1", "plan-10.md"));
  expect(statSync(join(root, "s1", "plan-10.md")).mode & 0o777).toBe(0o600);
  expect(plans.list("s2")).toEqual([]);
  const moved = plans.archiveActive("s1");
  expect(moved).toEqual({ from: join(root, "s1", "plan-10.md"), to: join(root, "s1", "archive", "plan-10.md") });
  expect(readFileSync(moved?.to ?? "", "utf8")).toBe("# plan 10\n");
  expect(statSync(join(root, "s1", "archive")).mode & 0o777).toBe(0o700);
  expect(plans.active("s1")?.seq).toBe(9);
  // Written again by hand under an archived number: both copies are kept.
  writeFileSync(join(root, "s1", "plan-10.md"), "again");
  expect(plans.archiveActive("s1")?.to).toBe(join(root, "s1", "archive", "plan-10.2.md"));
  expect(plans.write("s1", "next").seq).toBe(11);
});
