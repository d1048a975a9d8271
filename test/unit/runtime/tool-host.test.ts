/**
 * ToolHost over the RPC layer with its real worker (workers/tool-host.ts): a call runs there and
 * its abort signal cancels it with the turn's reason; a worker that crashes, exits or speaks
 * another version fails its calls with why and the next call starts a fresh one; close stops
 * what runs and refuses later calls.
 */
import { afterEach, expect, test } from "bun:test";
import { existsSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ToolHost } from "../../../src/runtime/tool-host.ts";
import { waitFor } from "../../support/daemon.ts";
import { type StandInMode, standIn } from "./fixtures/stand-in-worker.ts";

const roots: string[] = [];
const hosts: ToolHost[] = [];

afterEach(async () => {
  for (const host of hosts.splice(0)) await host.close();
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

function toolHost(options: { first?: StandInMode } = {}) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "spar-tool-host-")));
  roots.push(root);
  const log: string[] = [];
  let started = 0;
  const host = new ToolHost(
    { root, disabled: [] },
    {
      log: (message) => log.push(message),
      factory: () =>
        ++started === 1 && options.first
          ? standIn(options.first, "tool-host")
          : new Worker(new URL("../../../workers/tool-host.ts", import.meta.url)),
    },
  );
  hosts.push(host);
  return { host, log, root, started: () => started };
}

const never = new AbortController().signal;
const bash = (command: string) => ({ callId: "c1", name: "bash", args: { command } });

test("a call runs in the worker, and its abort signal stops it there (bash's process group is killed)", async () => {
  const { host, root } = toolHost();
  expect(await host.run(bash("echo hello"), never)).toMatchObject({ isError: false, output: { stdout: "hello\n" } });
  const controller = new AbortController();
  const marker = join(root, "started");
  const running = host.run(bash(`touch ${marker}; sleep 30`), controller.signal);
  // Aborted once the command runs.
  await waitFor(() => (existsSync(marker) ? true : undefined), 10_000, "the command started");
  controller.abort();
  const started = performance.now();
  expect(await running).toMatchObject({ isError: true, output: { error: "command stopped: the turn was cancelled" } });
  expect(performance.now() - started).toBeLessThan(10_000);
});

for (const [mode, what, reason] of [
  ["crash", "crashes", "tool host crashed: "],
  ["exit", "exits", "tool host exited"],
  ["next-version", "speaks another version", "tool host speaks v4, the daemon v3"],
] as const) {
  test(`a tool host that ${what} fails its call with why; the next call starts a new one`, async () => {
    const { host, log, started } = toolHost({ first: mode });
    const lost = await host.run(bash("echo never"), never);
    expect(lost.isError).toBe(true);
    expect(String(lost.output.error)).toStartWith(`not finished: ${reason}`);
    expect(log).toHaveLength(1);
    expect(log[0]).toStartWith(reason);
    expect(await host.run(bash("echo again"), never)).toMatchObject({ isError: false, output: { stdout: "again\n" } });
    expect(started()).toBe(2);
  });
}

test("close stops a running call and ends the worker; a later call is refused", async () => {
  const { host } = toolHost();
  const running = host.run(bash("sleep 30"), never);
  // The call is in the worker once an answer to a later call came back (one worker, in order).
  await host.run(bash("true"), never);
  const started = performance.now();
  await host.close();
  expect(performance.now() - started).toBeLessThan(3000);
  expect((await running).isError).toBe(true);
  expect(await host.run(bash("echo late"), never)).toEqual({
    output: { error: "not run: the daemon is shutting down" },
    isError: true,
  });
});
