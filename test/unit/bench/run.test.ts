/**
 * `bun run bench`: every benchmark it lists is a file in bench/, and an unknown name is a usage
 * error.
 */
import { expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { BENCHES } from "../../../bench/run.ts";
import { REPO_ROOT } from "../../support/daemon.ts";

const BENCH = join(REPO_ROOT, "bench");

test("every listed benchmark is a file of bench/ with a usage line naming it", async () => {
  for (const name of Object.keys(BENCHES)) {
    const file = join(BENCH, `${name}.ts`);
    expect(existsSync(file)).toBe(true);
    expect(await Bun.file(file).text()).toContain(`bench/${name}.ts`);
  }
});

test("no name lists the benchmarks (exit 0); an unknown one is a usage error (exit 2)", async () => {
  const listed = Bun.spawnSync([process.execPath, join(BENCH, "run.ts")]);
  expect(listed.exitCode).toBe(0);
  expect(listed.stdout.toString()).toContain("gate");
  const unknown = Bun.spawnSync([process.execPath, join(BENCH, "run.ts"), "nope"]);
  expect(unknown.exitCode).toBe(2);
  expect(unknown.stderr.toString()).toContain('no benchmark "nope"');
});
