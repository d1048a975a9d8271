/**
 * MCP stdio servers from the npm registry in a real daemon: server-everything listed on /mcp and
 * /tools as `everything__<tool>` and called through scripted turns in yolo mode (a result and an
 * error result); server-filesystem's annotations classing its tools (read-only runs without a
 * prompt in ask mode, a destructive one prompts with kind `generic`; /tools says which); the
 * `mcp` capability; a catalog override marking a tool read-only.
 */
import { afterEach, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { postJson, tempDir } from "../../support/daemon.ts";
import {
  EVERYTHING,
  FILESYSTEM,
  call,
  mcpRows,
  runTurn,
  say,
  settled,
  startWithCatalog,
  stopAll,
  toolResults,
  toolRows,
} from "../../fixtures/mcp/harness.ts";

afterEach(stopAll);

const everything = {
  version: 1,
  servers: { everything: { transport: "stdio", command: process.execPath, args: [EVERYTHING, "stdio"] } },
};

test("server-everything: listed on /mcp and /tools, echo returns its text, bad arguments come back as an error result, the turn completes", async () => {
  const running = await startWithCatalog(
    everything,
    [call("everything__echo", { message: "hello mcp" }), call("everything__get-sum", { a: 1, b: "two" }), say("done")],
    ["--permission-mode=yolo"],
  );
  const capabilities = running.events.frames.find((frame) => frame.event === "capabilities");
  expect((capabilities?.data.features as Record<string, unknown>).mcp).toBe(true);
  const [row] = await settled(running.base);
  expect(row).toMatchObject({ name: "everything", status: "ready", transport: "stdio" });
  expect(row?.tools?.map((tool) => tool.name)).toContain("echo");
  expect(row?.pid).toBeGreaterThan(0);
  const tools = await toolRows(running.base);
  const echo = tools.find((tool) => tool.name === "everything__echo");
  expect(echo).toMatchObject({ source: "mcp", server: "everything", read_only: true });
  expect(typeof echo?.description).toBe("string");
  expect(tools.filter((tool) => tool.source === "builtin").map((tool) => tool.name)).toEqual([
    "bash",
    "read_file",
    "write_file",
    "edit_file",
    "delete_file",
    "fetch_url",
    "schedule_next_turn",
    "return_result",
    "report_alert",
  ]);
  const end = await runTurn(running);
  expect(end.event).toBe("turn-complete");
  const [echoed, sum] = toolResults(running.events);
  expect(echoed).toMatchObject({ name: "everything__echo", response: { content: "Echo: hello mcp" } });
  expect(echoed?.response.error).toBeUndefined();
  expect(sum?.name).toBe("everything__get-sum");
  expect(String(sum?.response.error)).toContain("Invalid arguments for tool get-sum");
  // Kept for the daemon's life: the same process served both calls.
  expect((await mcpRows(running.base))[0]?.pid).toBe(row?.pid);
}, 30_000);

test("server-filesystem: read-only tools run without asking, a destructive one prompts (kind generic); /tools shows the classes", async () => {
  const root = tempDir("spar-mcp-fs-");
  writeFileSync(join(root, "note.txt"), "from disk\n");
  const catalog = {
    version: 1,
    servers: { fs: { transport: "stdio", command: process.execPath, args: [FILESYSTEM, root], env_mode: "clean" } },
  };
  const running = await startWithCatalog(catalog, [
    call("fs__read_text_file", { path: join(root, "note.txt") }),
    call("fs__write_file", { path: join(root, "new.txt"), content: "written" }),
    say("done"),
  ]);
  await settled(running.base);
  const tools = await toolRows(running.base);
  const byName = (name: string) => tools.find((tool) => tool.name === name);
  expect(byName("fs__read_text_file")).toMatchObject({ source: "mcp", server: "fs", read_only: true });
  expect(byName("fs__list_directory")).toMatchObject({ read_only: true });
  expect(byName("fs__write_file")).toMatchObject({ source: "mcp", server: "fs", read_only: false });
  expect(byName("fs__move_file")).toMatchObject({ read_only: false });
  expect(byName("fs__create_directory")).toMatchObject({ read_only: false });
  expect((await postJson(`${running.base}/inject`, { message: "go" })).status).toBe(200);
  const prompt = await running.prompts.waitFor((frame) => frame.event === "prompt", 15_000);
  expect(prompt.data).toMatchObject({ kind: "generic", tool: "fs__write_file" });
  // The read ran before the prompt, unasked (read once the events stream reached the prompt too).
  await running.events.waitFor(
    (frame) => frame.event === "status-update" && frame.data.turn_state === "awaiting_permission",
  );
  expect(toolResults(running.events)[0]).toMatchObject({
    name: "fs__read_text_file",
    response: { content: "from disk\n" },
  });
  expect((await postJson(`${running.base}/perms/respond`, { id: prompt.data.id, decision: "allow-once" })).status).toBe(
    200,
  );
  await running.events.waitFor((frame) => frame.event === "turn-complete", 15_000);
  expect(readFileSync(join(root, "new.txt"), "utf8")).toBe("written");
  expect(running.prompts.frames.filter((frame) => frame.event === "prompt")).toHaveLength(1);
}, 30_000);

test("a catalog override marks an unannotated tool read-only: it runs in plan mode, where a mutating tool is refused", async () => {
  const catalog = {
    version: 1,
    servers: {
      everything: {
        transport: "stdio",
        command: process.execPath,
        args: [EVERYTHING, "stdio"],
        tool_overrides: { "toggle-simulated-logging": { mutating: false } },
      },
    },
  };
  const running = await startWithCatalog(
    catalog,
    [
      call("everything__toggle-simulated-logging", {}),
      call("everything__gzip-file-as-resource", { name: "x", data: "data:text/plain,hi" }),
      say("done"),
    ],
    ["--permission-mode=plan"],
  );
  await settled(running.base);
  const tools = await toolRows(running.base);
  expect(tools.find((tool) => tool.name === "everything__toggle-simulated-logging")).toMatchObject({ read_only: true });
  expect(tools.find((tool) => tool.name === "everything__gzip-file-as-resource")).toMatchObject({ read_only: false });
  await runTurn(running);
  const [toggled, zipped] = toolResults(running.events);
  expect(toggled?.response.error).toBeUndefined();
  expect(String(toggled?.response.content)).toContain("logging");
  expect(String(zipped?.response.error)).toContain("plan");
}, 30_000);

test("started lazily: nothing runs until first use, and the first turn is already offered the server's tools", async () => {
  const running = await startWithCatalog(
    everything,
    [call("everything__echo", { message: "first use" }), say("done")],
    ["--permission-mode=yolo"],
  );
  // A server started eagerly would be "starting" (with a pid) from the moment the daemon wired
  // it, before it listened: "idle" now means nothing started it.
  const [idle] = await mcpRows(running.base);
  expect(idle).toMatchObject({ name: "everything", status: "idle" });
  expect(idle?.pid).toBeUndefined();
  expect((await runTurn(running)).event).toBe("turn-complete");
  expect(toolResults(running.events)[0]).toMatchObject({
    name: "everything__echo",
    response: { content: "Echo: first use" },
  });
  expect((await mcpRows(running.base))[0]).toMatchObject({ status: "ready" });
}, 30_000);
