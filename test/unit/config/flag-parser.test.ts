/**
 * The one flag parser's "did you mean" (D337): an unknown flag near one of the table's names (a
 * typo, a swap, an unambiguous prefix) names it; one near none, or near two alike, names none. Run
 * through every command that parses flags: the agent, svc, the watcher and an operator verb.
 */
import { describe, expect, test } from "bun:test";
import { AGENT_FLAGS } from "../../../src/cli/agent-flags.ts";
import { SVC_FLAGS } from "../../../src/cli/svc-flags.ts";
import { parseWatcherArgs } from "../../../src/cli/watcher-args.ts";
import { operatorCommand } from "../../../src/cli/svc-sessions/operator-command.ts";
import type { FlagSpec } from "../../../src/config/flag-spec.ts";
import { closestName, parseFlags } from "../../../src/config/flag-parser.ts";
import { main } from "../../../src/main.ts";

function refusal(specs: readonly FlagSpec[], ...argv: string[]): string {
  const parsed = parseFlags(specs, argv);
  if (parsed.ok) throw new Error(`parsed ${argv.join(" ")}`);
  return parsed.error;
}

describe("closestName", () => {
  const names = ["listen", "session-db", "session-db-driver", "multi-session", "model", "mode"];

  test("a typo, a missing or extra letter and a swap of neighbours find the flag", () => {
    expect(closestName("lisen", names)).toBe("listen");
    expect(closestName("sesion-db", names)).toBe("session-db");
    expect(closestName("session-dbb", names)).toBe("session-db");
    expect(closestName("multi-sesison", names)).toBe("multi-session");
    expect(closestName("LISTEN", names)).toBe("listen");
  });

  test("an unambiguous prefix finds the flag; an ambiguous one or a far name finds none", () => {
    expect(closestName("multi", names)).toBe("multi-session");
    expect(closestName("session-db-d", names)).toBe("session-db-driver");
    expect(closestName("sess", names)).toBeUndefined();
    expect(closestName("bogus", names)).toBeUndefined();
    expect(closestName("", names)).toBeUndefined();
  });

  test("two names as near as each other: no guess", () => {
    // "modl" is one edit from both `model` and `mode`.
    expect(closestName("modl", names)).toBeUndefined();
  });
});

describe("every command's unknown flag", () => {
  test("spar agent: a typo names the flag; a far name keeps the plain refusal", () => {
    expect(refusal(AGENT_FLAGS, "--multi-sesion")).toBe(
      "unknown flag --multi-sesion (did you mean --multi-session? see --help)",
    );
    expect(refusal(AGENT_FLAGS, "--atach-listen=127.0.0.1:0")).toContain("did you mean --attach-listen?");
    expect(refusal(AGENT_FLAGS, "--no-such-flag")).toBe("unknown flag --no-such-flag (see --help)");
  });

  test("spar svc: a typo names the flag", () => {
    expect(refusal(SVC_FLAGS, "--lisen=127.0.0.1:7777")).toBe(
      "unknown flag --lisen (did you mean --listen? see --help)",
    );
    expect(refusal(SVC_FLAGS, "--worklaod=x")).toContain("did you mean --workload?");
  });

  test("spar watcher watch: a typo of a flag, the repeatable --severity included", () => {
    const stormy = parseWatcherArgs(["--dry-run", "--stromy=on"]);
    expect(stormy.ok ? "" : stormy.error).toContain("unknown flag --stromy");
    const severity = parseWatcherArgs(["--dry-run", "--severty=storm=info"]);
    expect(severity.ok ? "" : severity.error).toBe("unknown flag --severty (did you mean --severity? see --help)");
    const kept = parseWatcherArgs(["--dry-run", "--severity=storm=info", "--severity", "pod=warning"]);
    expect(kept.ok && kept.value.severity).toEqual(["storm=info", "pod=warning"]);
  });

  test("an operator verb: a typo names the verb's flag", async () => {
    const err: string[] = [];
    const output = { stdout: () => {}, stderr: (text: string) => err.push(text) };
    expect(await operatorCommand(["sessions", "abort", "incident-a", "--reasn=x"], {}, output)).toBe(2);
    expect(err.join("")).toContain("unknown flag --reasn (did you mean --reason? see --help)");
  });

  test("spar itself: a misspelt command names the command", async () => {
    const written: string[] = [];
    const original = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((text: string) => written.push(text) > 0) as typeof process.stderr.write;
    try {
      expect(await main(["agnet"], "spar")).toBe(2);
    } finally {
      process.stderr.write = original;
    }
    expect(written.join("")).toContain('spar: unknown command "agnet" (did you mean `spar agent`?)');
  });
});
