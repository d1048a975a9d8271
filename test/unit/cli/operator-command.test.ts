import { describe, expect, test } from "bun:test";
import { operatorCommand } from "../../../src/cli/svc-sessions/operator-command.ts";

function captured(): { out: string[]; err: string[]; output: { stdout(t: string): void; stderr(t: string): void } } {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, output: { stdout: (t) => out.push(t), stderr: (t) => err.push(t) } };
}

describe("spar svc sessions: the verb table", () => {
  test("an unknown verb is a usage error (exit 2) naming it", async () => {
    const io = captured();
    expect(await operatorCommand(["sessions", "frobnicate"], {}, io.output)).toBe(2);
    expect(io.err.join("")).toContain('unknown verb "sessions frobnicate"');
  });

  test("sessions with no verb lists the verbs and exits 2; --help exits 0", async () => {
    const bare = captured();
    expect(await operatorCommand(["sessions"], {}, bare.output)).toBe(2);
    expect(bare.out.join("")).toContain("usage: spar svc sessions <verb>");
    const help = captured();
    expect(await operatorCommand(["sessions", "--help"], {}, help.output)).toBe(0);
  });
});
