/**
 * The counting tool server (test/fixtures/mcp/counting-server.ts) behind the real ToolHost and its
 * worker, from a catalog naming it over stdio: each execution is one durable line in
 * `<tool>.calls` written before the tool answers, the caller's run metadata (the write gate's
 * idempotency key) reaches the server as the request's `_meta`, also through the skill layer, and
 * a builtin ignores it; a blocked tool holds its call until released,
 * arguments failing the declared schema execute nothing, and read_status reads the state file.
 * With `COUNT_TIMESTAMPS=1` (bench/gate.ts) each line also carries the execution's epoch time.
 */
import { afterEach, expect, test } from "bun:test";
import { realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type McpCatalog, parseCatalog } from "../../../src/mcp/catalog.ts";
import { McpManager } from "../../../src/mcp/mcp-manager.ts";
import { DEFAULT_MCP_TIMEOUTS } from "../../../src/mcp/types.ts";
import { ok } from "../../../src/core/result.ts";
import { ToolHost } from "../../../src/runtime/tool-host.ts";
import { SkillLibrary } from "../../../src/skills/skill-library.ts";
import { SkillAwareTools } from "../../../src/skills/skill-tools.ts";
import { tempDir } from "../../support/daemon.ts";
import {
  COUNTING_SERVER,
  blockTool,
  countedCalls,
  countingServerEntry,
  countingServerPids,
  releaseTool,
  waitForCalls,
} from "../../fixtures/mcp/counting.ts";
import { killLeftovers } from "../../fixtures/mcp/harness.ts";

const hosts: ToolHost[] = [];
const directories: string[] = [];

afterEach(async () => {
  for (const host of hosts.splice(0)) await host.close();
  killLeftovers(directories.splice(0).flatMap(countingServerPids));
});

async function countingHost(env: Record<string, string> = {}) {
  const directory = realpathSync(tempDir("spar-count-"));
  directories.push(directory);
  const entry = countingServerEntry(directory);
  const server = { ...entry, env: { ...(entry.env as Record<string, string>), ...env } };
  const text = JSON.stringify({ version: 1, servers: { count: server } });
  const parsed = parseCatalog(text, join(directory, "mcp.json"), process.env);
  if (!parsed.ok) throw new Error(parsed.error);
  const catalog: McpCatalog = parsed.value;
  const mcp = new McpManager(catalog, DEFAULT_MCP_TIMEOUTS, () => ok(catalog));
  const host = new ToolHost({ root: directory, disabled: [] }, { mcp });
  hosts.push(host);
  await mcp.discover();
  return { host, directory };
}

const never = new AbortController().signal;
const apply = (replicas: unknown) => ({ callId: "c1", name: "count__apply_change", args: { replicas } });

test("apply_change executes once: one line with its arguments, written before the answer; no metadata is null", async () => {
  const { host, directory } = await countingHost();
  expect(host.list().find((tool) => tool.name === "count__apply_change")).toMatchObject({ readOnly: false });
  expect(host.list().find((tool) => tool.name === "count__read_status")).toMatchObject({ readOnly: true });
  const result = await host.run(apply(3), never);
  expect(result).toMatchObject({ isError: false, output: { structured: { applied: { replicas: 3 } } } });
  expect(countedCalls(directory, "apply_change")).toEqual([{ args: { replicas: 3 }, meta: null }]);
}, 30_000);

test("COUNT_TIMESTAMPS=1 adds the execution's epoch milliseconds as `at`, taken when the call enters", async () => {
  const { host, directory } = await countingHost({ COUNT_TIMESTAMPS: "1" });
  const before = Date.now();
  await host.run(apply(7), never, { meta: { idempotency_key: "k7" } });
  const after = Date.now();
  const calls = countedCalls(directory, "apply_change");
  expect(calls).toEqual([{ args: { replicas: 7 }, meta: { idempotency_key: "k7" }, at: expect.any(Number) }]);
  const at = Number(calls[0]?.at);
  expect(at).toBeGreaterThanOrEqual(before - 1);
  expect(at).toBeLessThanOrEqual(after + 1);
}, 30_000);

test("the run's metadata reaches the tool server as the request's _meta: the idempotency key arrives", async () => {
  const { host, directory } = await countingHost();
  const result = await host.run(apply(4), never, { meta: { idempotency_key: "k1" } });
  expect(result).toMatchObject({ isError: false, output: { structured: { applied: { replicas: 4 } } } });
  const calls = countedCalls(directory, "apply_change");
  expect(calls).toHaveLength(1);
  expect(calls[0]?.meta?.idempotency_key).toBe("k1");
}, 30_000);

test("the skill layer forwards the metadata to the tool host; a builtin run with metadata ignores it", async () => {
  const { host, directory } = await countingHost();
  const tools = new SkillAwareTools(host, new SkillLibrary(directory));
  await tools.run(apply(6), never, { meta: { idempotency_key: "grant-7", attempt: 1 } });
  expect(countedCalls(directory, "apply_change")).toEqual([
    { args: { replicas: 6 }, meta: { idempotency_key: "grant-7", attempt: 1 } },
  ]);
  const builtin = await tools.run({ callId: "b1", name: "bash", args: { command: "echo hi" } }, never, {
    meta: { idempotency_key: "k2" },
  });
  expect(builtin).toMatchObject({ isError: false, output: { stdout: "hi\n" } });
}, 30_000);

test("a blocked tool has written its line while it holds the call; the release answers it, still one line", async () => {
  const { host, directory } = await countingHost();
  blockTool(directory, "apply_change");
  let settled = false;
  const running = host.run(apply(5), never).finally(() => (settled = true));
  expect(await waitForCalls(directory, "apply_change")).toHaveLength(1);
  // Time under test: 200 ms after its line, the call is still held.
  await Bun.sleep(200);
  expect(settled).toBe(false);
  releaseTool(directory, "apply_change");
  expect(await running).toMatchObject({ isError: false, output: { structured: { applied: { replicas: 5 } } } });
  expect(countedCalls(directory, "apply_change")).toHaveLength(1);
}, 30_000);

test("arguments failing the declared schema (not an integer, missing) execute nothing", async () => {
  const { host, directory } = await countingHost();
  expect((await host.run(apply(1.5), never)).isError).toBe(true);
  expect((await host.run({ callId: "c2", name: "count__apply_change", args: {} }, never)).isError).toBe(true);
  expect(countedCalls(directory, "apply_change")).toEqual([]);
}, 30_000);

test("read_status reads the state file (steady without one) and counts its executions too", async () => {
  const { host, directory } = await countingHost();
  const status = { callId: "c1", name: "count__read_status", args: {} };
  expect(await host.run(status, never)).toMatchObject({ output: { content: "state=steady" } });
  writeFileSync(join(directory, "state"), "degraded\n");
  expect(await host.run(status, never)).toMatchObject({
    output: { content: "state=degraded", structured: { state: "degraded" } },
  });
  expect(countedCalls(directory, "read_status")).toHaveLength(2);
}, 30_000);

test("delete_thing counts its execution and answers the name", async () => {
  const { host, directory } = await countingHost();
  const result = await host.run({ callId: "c1", name: "count__delete_thing", args: { name: "web-1" } }, never);
  expect(result).toMatchObject({ isError: false, output: { structured: { deleted: "web-1" } } });
  expect(countedCalls(directory, "delete_thing")).toEqual([{ args: { name: "web-1" }, meta: null }]);
}, 30_000);

test("the server exits when its stdin closes, even while a call is blocked (a killed daemon leaves no poller)", async () => {
  const directory = realpathSync(tempDir("spar-count-"));
  directories.push(directory);
  blockTool(directory, "apply_change");
  const child = Bun.spawn([process.execPath, COUNTING_SERVER], {
    env: { ...process.env, COUNT_DIR: directory },
    stdin: "pipe",
    stdout: "ignore",
    stderr: "ignore",
  });
  const send = (message: Record<string, unknown>) =>
    child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`);
  send({
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "test", version: "1" } },
  });
  send({ method: "notifications/initialized" });
  send({ id: 2, method: "tools/call", params: { name: "apply_change", arguments: { replicas: 2 } } });
  await child.stdin.flush();
  await waitForCalls(directory, "apply_change");
  child.stdin.end();
  // Deadline: a server still running by then fails the assertion below.
  const exited = await Promise.race([child.exited, Bun.sleep(5000).then(() => "still running")]);
  expect(exited).toBe(0);
}, 30_000);

test("without COUNT_DIR the server refuses to start", async () => {
  const { COUNT_DIR: _unset, ...env } = process.env;
  const child = Bun.spawn([process.execPath, COUNTING_SERVER], { env, stdin: "pipe", stderr: "pipe" });
  expect(await child.exited).toBe(2);
  expect(await new Response(child.stderr).text()).toContain("COUNT_DIR is required");
});
