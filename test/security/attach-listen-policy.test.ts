/**
 * Attacks on the listen policy: a daemon asked to listen beyond loopback without an
 * authentication gate refuses to start (exit 1, naming the fix); a token variable that is not set
 * is a startup error, never a listener without its token; a tokenless loopback listener warns.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { startupRefusal } from "../support/agent-startup.ts";
import { runToExit } from "../support/daemon-scope.ts";
import { sparCommand, startDaemon, tempDir } from "../support/daemon.ts";

describe("startup policy", () => {
  test("a non-loopback bind without a gate stops the process (exit 1), naming the fix", async () => {
    const dir = tempDir();
    const result = await runToExit(
      sparCommand("agent", `--session-db=${join(dir, "s.db")}`, "--attach-listen=0.0.0.0:0"),
      {
        cwd: dir,
      },
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("without an authentication gate");
    expect(result.stderr).toContain("--attach-token");
  });

  // The refusals below are startAgent's (the command logs them and exits 1, as above), decided in process.
  async function refusal(args: string[], env: Record<string, string> = {}): Promise<string> {
    const dir = tempDir();
    return await startupRefusal([`--session-db=${join(dir, "s.db")}`, ...args], dir, env);
  }

  test("non-loopback binds without a gate are refused at startup, naming the fix", async () => {
    for (const listen of ["0.0.0.0:0", ":0", "[::]:0", "example.com:0"]) {
      const refused = await refusal([`--attach-listen=${listen}`]);
      expect(refused).toContain("without an authentication gate");
      expect(refused).toContain("--attach-token");
    }
  });

  test("a token variable that is not set is refused at startup naming it, never a listener without its token", async () => {
    expect(await refusal(["--attach-listen=127.0.0.1:0", "--attach-token=SPAR_NOT_SET_ANYWHERE"])).toContain(
      "SPAR_NOT_SET_ANYWHERE",
    );
  });

  test("a token variable set to blanks is refused at startup: a blank token gates nothing", async () => {
    expect(
      await refusal(["--attach-listen=0.0.0.0:0", "--attach-token=SPAR_BLANK_TOKEN"], { SPAR_BLANK_TOKEN: "   " }),
    ).toContain("SPAR_BLANK_TOKEN");
  });

  test("a tokenless loopback listener starts with a warning", async () => {
    const daemon = await startDaemon({});
    expect(daemon.log()).toContain("has no token");
    await daemon.sigterm();
  });
});
