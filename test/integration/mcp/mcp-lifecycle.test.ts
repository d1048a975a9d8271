/**
 * Tool-server faults in a real daemon (RELIABILITY "MCP server"): a server that ignores SIGTERM
 * is SIGKILLed within the grace when the daemon stops (checked by pid after exit); a server that
 * crashes mid-call fails that call while the session lives on and the next call starts it again;
 * a server that never answers initialize fails its start after the timeout and is killed.
 */
import { afterEach, expect, test } from "bun:test";
import { join } from "node:path";
import { postJson, tempDir, waitFor } from "../../support/daemon.ts";
import {
  FIXTURE,
  call,
  killLeftovers,
  mcpRows,
  pidsIn,
  processGone,
  runTurn,
  say,
  settled,
  startWithCatalog,
  stopAll,
  toolResults,
} from "../../fixtures/mcp/harness.ts";

const pidFiles: string[] = [];
afterEach(async () => {
  await stopAll();
  killLeftovers(pidFiles.splice(0).flatMap(pidsIn));
});

function fixture(mode: string) {
  const pidFile = join(tempDir("spar-mcp-pids-"), "pids");
  pidFiles.push(pidFile);
  return {
    pidFile,
    catalog: {
      version: 1,
      servers: {
        fx: {
          transport: "stdio",
          command: process.execPath,
          args: [FIXTURE],
          env: { FIXTURE_MODE: mode, FIXTURE_PID_FILE: pidFile },
        },
      },
    },
  };
}

test("a server that ignores SIGTERM is SIGKILLed within the grace at daemon stop; the daemon exits 0 with no child left", async () => {
  const { pidFile, catalog } = fixture("ignore-term");
  const running = await startWithCatalog(catalog, [say("unused")], ["--mcp-stop-grace=1s"]);
  const [row] = await settled(running.base);
  expect(row?.status).toBe("ready");
  const [pid] = pidsIn(pidFile);
  expect(pid).toBe(row?.pid as number);
  const started = Date.now();
  running.daemon.process.kill("SIGTERM");
  expect(await running.daemon.process.exited).toBe(0);
  const took = Date.now() - started;
  expect(processGone(pid as number)).toBe(true);
  // SIGTERM was ignored, so the grace ran out before the kill: at least 1 s, and not the tool host's fallback of grace plus 3 s on top of the drain.
  expect(took).toBeGreaterThanOrEqual(1000);
  expect(took).toBeLessThan(6000);
  expect(running.daemon.log()).toContain("shutdown complete");
}, 30_000);

test("a server that crashes mid-call: that call fails, the session lives, the next call starts the server again", async () => {
  const { pidFile, catalog } = fixture("normal");
  const running = await startWithCatalog(
    catalog,
    [call("fx__crash", { after_ms: 200 }), say("it crashed"), call("fx__whoami", {}), say("back")],
    ["--permission-mode=yolo"],
  );
  const [row] = await settled(running.base);
  const first = row?.pid as number;
  const end = await runTurn(running);
  expect(end.event).toBe("turn-complete");
  const crashed = toolResults(running.events)[0];
  expect(crashed?.name).toBe("fx__crash");
  expect(String(crashed?.response.error)).toContain("tool server fx");
  await waitFor(
    async () => ((await mcpRows(running.base))[0]?.status === "failed" ? true : undefined),
    5000,
    "the server to show failed",
  );
  expect(processGone(first)).toBe(true);
  const again = await runTurn(running, "again");
  expect(again.event).toBe("turn-complete");
  const whoami = toolResults(running.events)[1];
  const second = pidsIn(pidFile)[1] as number;
  expect(second).toBeGreaterThan(0);
  expect(second).not.toBe(first);
  expect(whoami?.response).toMatchObject({ content: `pid ${second}` });
  expect((await mcpRows(running.base))[0]).toMatchObject({ status: "ready", pid: second });
  expect((await postJson(`${running.base}/inject`, { message: "still here" })).status).toBe(200);
}, 30_000);

test("a server that hangs at start fails after --mcp-start-timeout, is killed, and a call to it is an error result", async () => {
  const { pidFile, catalog } = fixture("hang-start");
  const running = await startWithCatalog(
    catalog,
    [call("fx__whoami", {}), say("done")],
    ["--mcp-start-timeout=1s", "--permission-mode=yolo"],
  );
  const started = Date.now();
  const [row] = await settled(running.base, 10_000);
  expect(Date.now() - started).toBeLessThan(5000);
  expect(row).toMatchObject({ name: "fx", status: "failed", transport: "stdio" });
  expect(row?.error).toContain("did not start within 1 s");
  expect(row?.tools).toBeUndefined();
  const [pid] = pidsIn(pidFile);
  await waitFor(() => (processGone(pid as number) ? true : undefined), 3000, "the hung server to be killed");
  // Its tools were never listed: the model was not offered them, and a proposed call is not available.
  const end = await runTurn(running);
  expect(end.event).toBe("turn-complete");
  expect(toolResults(running.events)[0]?.response.error).toBe('tool "fx__whoami" is not available in this session');
}, 30_000);
