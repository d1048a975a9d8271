/** `spar svc stop`'s row of the operator verb table: help, usage errors (exit 2 naming the flag). */
import { expect, test } from "bun:test";
import { operatorCommand } from "../../../src/cli/svc-sessions/operator-command.ts";

function captured() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, output: { stdout: (t: string) => out.push(t), stderr: (t: string) => err.push(t) } };
}

test("stop --help prints its usage and flags and exits 0", async () => {
  const io = captured();
  expect(await operatorCommand(["stop", "--help"], {}, io.output)).toBe(0);
  const help = io.out.join("");
  expect(help).toContain("spar svc stop [--addr=<url>] [--reason=<text>] [--pause-sessions]");
  for (const flag of ["--addr", "--reason", "--pause-sessions"]) expect(help).toContain(flag);
});

test("an unknown flag or a positional argument is a usage error (exit 2) naming it", async () => {
  const flag = captured();
  expect(await operatorCommand(["stop", "--force"], {}, flag.output)).toBe(2);
  expect(flag.err.join("")).toContain("--force");
  const positional = captured();
  expect(await operatorCommand(["stop", "now"], {}, positional.output)).toBe(2);
  expect(positional.err.join("")).toContain('unexpected argument "now"');
});
