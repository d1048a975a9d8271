/**
 * The mutating operator verbs' command lines, in process and with no daemon: `--help` on every
 * verb is exit 0; a usage error is exit 2 naming the flag; an unreachable daemon is exit 1 naming
 * the address and the fix.
 */
import { describe, expect, test } from "bun:test";
import { operatorCommand } from "../../../src/cli/svc-sessions/operator-command.ts";

function captured() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out: () => out.join(""),
    err: () => err.join(""),
    output: { stdout: (text: string) => out.push(text), stderr: (text: string) => err.push(text) },
  };
}

async function run(...argv: string[]) {
  const io = captured();
  const code = await operatorCommand(argv, {}, io.output);
  return { code, out: io.out(), err: io.err() };
}

const VERBS = ["resume", "pause", "extend-token", "abort", "ack-effects"];

describe("spar svc sessions <mutating verb>", () => {
  test("--help on every verb prints its usage and flags and exits 0", async () => {
    for (const verb of VERBS) {
      const help = await run("sessions", verb, "--help");
      expect(help.code).toBe(0);
      expect(help.out).toContain(`usage: spar svc sessions ${verb}`);
      expect(help.out).toContain("--addr");
    }
  });

  test("usage errors exit 2 naming the flag or argument", async () => {
    const cases: Array<[string[], string]> = [
      [["sessions", "pause", "incident-a"], "missing --reason"],
      [["sessions", "pause", "incident-a", "--reason=nap"], "--reason must be one of budget_exhaustion"],
      [["sessions", "pause", "--reason=operator"], "missing <session-id>"],
      [
        [
          "sessions",
          "pause",
          "incident-a",
          "--reason=operator",
          "--resume-at=2026-01-01T00:00:00Z",
          "--resume-after=5m",
        ],
        "--resume-at and --resume-after exclude each other",
      ],
      [
        ["sessions", "pause", "incident-a", "--reason=operator", "--resume-at=tomorrow"],
        "--resume-at takes an RFC 3339 time",
      ],
      [["sessions", "pause", "incident-a", "--reason=operator", "--ttl=2days"], "--ttl"],
      [["sessions", "resume", "incident-a", "--interrupt=gate-1", "--response={nope"], "--response is not JSON"],
      [["sessions", "resume", "incident-a", "--response={}"], "missing --interrupt"],
      [["sessions", "resume", "incident-a", "--interrupt=gate-1"], "missing --response"],
      [["sessions", "resume", "--interrupt=gate-1", "--response={}"], "missing <session-id>"],
      [["sessions", "resume", "incident-a", "--token=mrt_x"], "unexpected argument"],
      [
        ["sessions", "resume", "--token=mrt_x", "--addr=http://x", "--session-db=/tmp/s.db"],
        "--addr and --session-db exclude each other",
      ],
      [["sessions", "resume", "--token=mrt_x", "--session-db=/tmp/s.db", "--response={}"], "--response needs a daemon"],
      [
        ["sessions", "resume", "incident-a", "--interrupt=g", "--response={}", "--session-db=/tmp/s.db"],
        "--session-db works only with --token",
      ],
      [["sessions", "extend-token", "mrt_x"], "missing --ttl"],
      [["sessions", "extend-token", "--ttl=1h"], "missing <mrt_token>"],
      [["sessions", "abort"], "missing <session-id>"],
      [["sessions", "abort", "a", "b"], 'unexpected argument "b"'],
      [["sessions", "abort", "a", "--force"], "unknown flag --force"],
      [["sessions", "ack-effects", "a", "--addr=http://x", "--session-db=/tmp/s.db"], "exclude each other"],
    ];
    for (const [argv, expected] of cases) {
      const result = await run(...argv);
      expect({ argv, code: result.code }).toEqual({ argv, code: 2 });
      expect(result.err).toContain(expected);
    }
  });

  test("an unreachable daemon is exit 1 naming the address and the fix", async () => {
    const result = await run("sessions", "abort", "incident-a", "--addr=http://127.0.0.1:1");
    expect(result.code).toBe(1);
    expect(result.err).toContain("no svc daemon answered at http://127.0.0.1:1");
    expect(result.err).toContain("pass --addr=<its main listener URL>");
  });

  test("a direct write to a store that does not exist is exit 1 naming it, after the warning", async () => {
    const result = await run("sessions", "ack-effects", "incident-a", "--session-db=/nonexistent/s.db");
    expect(result.code).toBe(1);
    expect(result.err).toContain("warning: writing /nonexistent/s.db directly");
    expect(result.err).toContain("no session store at /nonexistent/s.db");
  });
});
