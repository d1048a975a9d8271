/**
 * The worker's server pool with real stdio children (the fixture server): servers stop
 * concurrently (two that ignore SIGTERM are both gone after one grace, not two), a reconfigure
 * stops a changed server and keeps an unchanged one, and status changes are reported.
 */
import { afterEach, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { StdioServer } from "../../../src/mcp/catalog.ts";
import { ServerPool } from "../../../src/mcp/server-pool.ts";
import { tempDir, waitFor } from "../../support/daemon.ts";
import { FIXTURE, killLeftovers, pidsIn, processGone } from "../../fixtures/mcp/harness.ts";

const timeouts = { startMs: 10_000, callMs: 10_000, stopGraceMs: 1000, retryMs: 30_000 };
const pidFile = () => join(tempDir("spar-pool-"), "pids");
const server = (name: string, mode: string, file: string): StdioServer => ({
  name,
  transport: "stdio",
  command: process.execPath,
  args: [FIXTURE],
  envMode: "inherit",
  envPassthrough: [],
  env: { FIXTURE_MODE: mode, FIXTURE_PID_FILE: file },
  overrides: {},
});

const files: string[] = [];
afterEach(() => killLeftovers(files.splice(0).flatMap(pidsIn)));

test("two servers ignoring SIGTERM are SIGKILLed together after one grace", async () => {
  const a = pidFile();
  const b = pidFile();
  files.push(a, b);
  const pool = new ServerPool(process.env, tempDir());
  await pool.configure({ servers: [server("a", "ignore-term", a), server("b", "ignore-term", b)], timeouts });
  const states = await pool.discover();
  expect(states.map((state) => state.status)).toEqual(["ready", "ready"]);
  const pids = [...pidsIn(a), ...pidsIn(b)];
  expect(pids).toHaveLength(2);
  const started = Date.now();
  await pool.stopAll();
  const took = Date.now() - started;
  expect(took).toBeGreaterThanOrEqual(950);
  // One after the other would take at least two graces.
  expect(took).toBeLessThan(1990);
  expect(pids.every(processGone)).toBe(true);
}, 20_000);

test("reconfigure: a changed server is stopped and comes back unstarted, an unchanged one keeps its process; changes are reported", async () => {
  const a = pidFile();
  const b = pidFile();
  files.push(a, b);
  let changes = 0;
  const pool = new ServerPool(process.env, tempDir(), () => changes++);
  await pool.configure({ servers: [server("a", "normal", a), server("b", "normal", b)], timeouts });
  await pool.discover();
  expect(changes).toBeGreaterThanOrEqual(4);
  const [pidA] = pidsIn(a);
  const [pidB] = pidsIn(b);
  await pool.configure({
    servers: [server("a", "normal", a), { ...server("b", "normal", b), args: [FIXTURE, "--changed"] }],
    timeouts,
  });
  expect(processGone(pidB as number)).toBe(true);
  expect(processGone(pidA as number)).toBe(false);
  expect(pool.states().map((state) => [state.name, state.status])).toEqual([
    ["a", "ready"],
    ["b", "idle"],
  ]);
  const call = await pool.call("a", "whoami", {}, new AbortController().signal);
  expect(call).toEqual({ output: { content: `pid ${pidA}` }, isError: false });
  expect(await pool.call("zzz", "whoami", {}, new AbortController().signal)).toEqual({
    output: { error: "tool server zzz is not in the catalog" },
    isError: true,
  });
  await pool.stopAll();
  expect(processGone(pidA as number)).toBe(true);
}, 20_000);

test("a call past the call timeout fails, a cancelled call fails as cancelled; the server stays up for the next call", async () => {
  const file = pidFile();
  files.push(file);
  const pool = new ServerPool(process.env, tempDir());
  await pool.configure({ servers: [server("a", "normal", file)], timeouts: { ...timeouts, callMs: 300 } });
  await pool.discover();
  const slow = await pool.call("a", "crash", { after_ms: 5000 }, new AbortController().signal);
  expect(slow.isError).toBe(true);
  expect(String(slow.output.error)).toContain("timed out");
  const controller = new AbortController();
  const cancelled = pool.call("a", "crash", { after_ms: 5000 }, controller.signal);
  // Cancelled once the server holds the call (the fixture notes each call).
  await waitFor(
    () => (readFileSync(`${file}.calls`, "utf8").split("\n").length > 2 ? true : undefined),
    5000,
    "the call",
  );
  controller.abort(new Error("the turn was cancelled"));
  expect(await cancelled).toEqual({ output: { error: "cancelled: the turn was cancelled" }, isError: true });
  const [pid] = pidsIn(file);
  expect(await pool.call("a", "whoami", {}, new AbortController().signal)).toEqual({
    output: { content: `pid ${pid}` },
    isError: false,
  });
  await pool.stopAll();
}, 20_000);
