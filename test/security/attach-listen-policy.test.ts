/**
 * Attacks on the listen policy: a daemon asked to listen beyond loopback without an
 * authentication gate refuses to start (exit 1, naming the fix); a token variable that is not set
 * is a startup error, never a listener without its token; a tokenless loopback listener warns.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { MAIN, startDaemon, tempDir } from "../support/daemon.ts";

describe("startup policy", () => {
  async function startup(args: string[], env: Record<string, string> = {}): Promise<{ code: number; log: string }> {
    const dir = tempDir();
    const child = Bun.spawn([process.execPath, MAIN, "agent", `--session-db=${join(dir, "s.db")}`, ...args], {
      cwd: dir,
      env: { ...process.env, ...env },
      stderr: "pipe",
      stdout: "pipe",
    });
    const code = await child.exited;
    return { code, log: await new Response(child.stderr).text() };
  }

  test("non-loopback binds without a gate are refused at startup (exit 1), naming the fix", async () => {
    for (const listen of ["0.0.0.0:0", ":0", "[::]:0", "example.com:0"]) {
      const result = await startup([`--attach-listen=${listen}`]);
      expect(result.code).toBe(1);
      expect(result.log).toContain("without an authentication gate");
      expect(result.log).toContain("--attach-token");
    }
  });

  test("a token variable that is not set is refused at startup (exit 1) naming it, never a listener without its token", async () => {
    const result = await startup(["--attach-listen=127.0.0.1:0", "--attach-token=SPAR_NOT_SET_ANYWHERE"]);
    expect(result.code).toBe(1);
    expect(result.log).toContain("SPAR_NOT_SET_ANYWHERE");
  });

  test("a token variable set to blanks is refused at startup (exit 1): a blank token gates nothing", async () => {
    const result = await startup(["--attach-listen=0.0.0.0:0", "--attach-token=SPAR_BLANK_TOKEN"], {
      SPAR_BLANK_TOKEN: "   ",
    });
    expect(result.code).toBe(1);
    expect(result.log).toContain("SPAR_BLANK_TOKEN");
  });

  test("a tokenless loopback listener starts with a warning", async () => {
    const daemon = await startDaemon({});
    expect(daemon.log()).toContain("has no token");
    await daemon.sigterm();
  });
});
