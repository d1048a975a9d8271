/**
 * The catalog at the daemon's edges: a bad mcp.json (or a named one that is missing) stops
 * startup with exit 2 and the key named; the echo model never reads it; `.agents/mcp.json` is the
 * default location; POST /reload re-reads the file (a removed server's process stops, an added
 * one starts, a bad file is reported and the old catalog stays).
 */
import { afterEach, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { usageError } from "../../support/agent-startup.ts";
import { postJson, startDaemon, tempDir, waitFor } from "../../support/daemon.ts";
import {
  EVERYTHING,
  FIXTURE,
  killLeftovers,
  mcpRows,
  pidsIn,
  processGone,
  say,
  settled,
  startWithCatalog,
  stopAll,
  writeCatalog,
} from "../../fixtures/mcp/harness.ts";

const pidFiles: string[] = [];
afterEach(async () => {
  await stopAll();
  killLeftovers(pidFiles.splice(0).flatMap(pidsIn));
});

test("a bad mcp.json is a startup error naming the key (exit 2); a missing named file too; echo never reads it", async () => {
  const bad = writeCatalog({ version: 1, servers: { a: { transport: "stdio" } } });
  const script = join(tempDir(), "empty.jsonl");
  writeFileSync(script, "");
  // Usage errors (the command prints "spar agent: <error>" and exits 2: test/integration/agent/config-file).
  const cwd = tempDir();
  const listen = ["--attach-listen=127.0.0.1:0", `--session-db=${join(cwd, "s.db")}`];
  const refused = usageError([...listen, "--model=scripted", `--script=${script}`, `--mcp-config=${bad}`], cwd);
  expect(refused).toStartWith(`mcp.json ${bad}: servers.a.command: required for transport "stdio"`);
  const missing = join(tempDir(), "absent.json");
  const gone = usageError([...listen, "--model=scripted", `--script=${script}`, `--mcp-config=${missing}`], cwd);
  expect(gone).toContain(`mcp.json ${missing}: cannot read it (ENOENT)`);
  // Tool servers are not wired under echo: the same bad file does not stop it.
  const daemon = await startDaemon({ args: [`--mcp-config=${bad}`] });
  try {
    expect(await (await fetch(`${daemon.baseUrl}/sessions/default/mcp`)).json()).toEqual({ servers: [] });
  } finally {
    await daemon.sigterm();
  }
}, 30_000);

test(".agents/mcp.json in the working directory is the default catalog", async () => {
  const cwd = tempDir("spar-mcp-cwd-");
  mkdirSync(join(cwd, ".agents"));
  writeFileSync(
    join(cwd, ".agents/mcp.json"),
    JSON.stringify({
      version: 1,
      servers: { everything: { transport: "stdio", command: process.execPath, args: [EVERYTHING, "stdio"] } },
    }),
  );
  writeFileSync(join(cwd, "script.jsonl"), `${JSON.stringify(say("hi"))}\n`);
  const daemon = await startDaemon({ cwd, args: ["--model=scripted", "--script=script.jsonl"] });
  try {
    const [row] = await settled(`${daemon.baseUrl}/sessions/default`);
    expect(row).toMatchObject({ name: "everything", status: "ready", transport: "stdio" });
  } finally {
    expect(await daemon.sigterm()).toBe(0);
  }
}, 30_000);

test("POST /reload: a removed server stops, an added one starts; a bad file is reported and the old catalog stays", async () => {
  const pidFile = join(tempDir("spar-mcp-pids-"), "pids");
  pidFiles.push(pidFile);
  const first = {
    version: 1,
    servers: { everything: { transport: "stdio", command: process.execPath, args: [EVERYTHING, "stdio"] } },
  };
  const running = await startWithCatalog(first, [say("unused")]);
  const [before] = await settled(running.base);
  const everythingPid = before?.pid as number;
  expect(everythingPid).toBeGreaterThan(0);
  const file = /tool servers: .* from (\S+)/.exec(running.daemon.log())?.[1] as string;
  writeFileSync(
    file,
    JSON.stringify({
      version: 1,
      servers: {
        fx: { transport: "stdio", command: process.execPath, args: [FIXTURE], env: { FIXTURE_PID_FILE: pidFile } },
      },
    }),
  );
  const answer = await postJson(`${running.base}/reload`);
  expect(answer.status).toBe(200);
  expect(await answer.json()).toMatchObject({ mcp: 1, errors: [] });
  await waitFor(() => (processGone(everythingPid) ? true : undefined), 5000, "the removed server to stop");
  const rows = await mcpRows(running.base);
  expect(rows).toHaveLength(1);
  expect(rows[0]).toMatchObject({ name: "fx", status: "ready", pid: pidsIn(pidFile)[0] });
  writeFileSync(file, JSON.stringify({ version: 1, servers: { fx: { transport: "carrier-pigeon" } } }));
  const refused = (await (await postJson(`${running.base}/reload`)).json()) as { mcp: number; errors: string[] };
  expect(refused.mcp).toBe(1);
  expect(refused.errors).toEqual([
    `mcp: mcp.json ${file}: servers.fx.transport: must be "http" or "stdio", not "carrier-pigeon"`,
  ]);
  expect((await mcpRows(running.base))[0]).toMatchObject({ name: "fx", status: "ready" });
}, 30_000);
