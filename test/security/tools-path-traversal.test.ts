/**
 * Path traversal through the file tools, driven by a scripted model in yolo mode (no prompt
 * stands between the model and the tools): dot-dot paths, absolute paths outside the workspace,
 * symlinks to files and directories outside it (also chained), writes, edits and deletes through
 * such links, NUL, and the workspace root itself. Each call is refused with an error result the
 * model reads; nothing outside the workspace is read, written, changed or deleted.
 * A write through a *dangling* symlink (a link inside the workspace to a file outside that does
 * not exist yet) is refused too: the check follows the link to where the write would land.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Daemon, postJson, startDaemon, tempDir } from "../support/daemon.ts";
import { type ToolResult, call, say, toolResults, writeScript } from "../support/scripted.ts";
import { type Collector, collect } from "../support/sse-client.ts";

const root = tempDir("spar-ws-");
const outside = tempDir("spar-outside-");
const SECRET = "outside secret 6d1f";

/** Each attack: a tool call and what its result must say. */
const attacks: Array<{ name: string; tool: string; args: Record<string, unknown>; error: string }> = [
  {
    name: "read_file of ../ out of the workspace",
    tool: "read_file",
    args: { path: `../${outside.split("/").pop()}/secret.txt` },
    error: "outside the workspace",
  },
  {
    name: "read_file of /etc/passwd",
    tool: "read_file",
    args: { path: "/etc/passwd" },
    error: "outside the workspace",
  },
  {
    name: "read_file of an absolute path outside",
    tool: "read_file",
    args: { path: join(outside, "secret.txt") },
    error: "outside the workspace",
  },
  {
    name: "read_file of sub/../../ out of the workspace",
    tool: "read_file",
    args: { path: "sub/../../secret.txt" },
    error: "outside the workspace",
  },
  {
    name: "read_file through a symlink to a file outside",
    tool: "read_file",
    args: { path: "link-file" },
    error: "through a symlink",
  },
  {
    name: "read_file through a symlinked directory outside",
    tool: "read_file",
    args: { path: "link-dir/secret.txt" },
    error: "through a symlink",
  },
  {
    name: "read_file through a chain of two symlinks",
    tool: "read_file",
    args: { path: "chain1" },
    error: "through a symlink",
  },
  {
    name: "write_file of a new file in a symlinked directory outside",
    tool: "write_file",
    args: { path: "link-dir/planted.txt", content: "planted" },
    error: "through a symlink",
  },
  {
    name: "write_file through a symlink to a file outside",
    tool: "write_file",
    args: { path: "link-victim", content: "pwned" },
    error: "through a symlink",
  },
  {
    name: "write_file through a dangling symlink to a file outside that does not exist yet",
    tool: "write_file",
    args: { path: "dangling", content: "written outside" },
    error: "through a symlink",
  },
  {
    name: "write_file through a dangling symlink into a missing directory outside",
    tool: "write_file",
    args: { path: "dangling-dir/new.txt", content: "written outside" },
    error: "through a symlink",
  },
  {
    name: "write_file through a loop of symlinks",
    tool: "write_file",
    args: { path: "loop-a", content: "x" },
    error: "symbolic links",
  },
  {
    name: "write_file to sub/../../ out of the workspace",
    tool: "write_file",
    args: { path: "sub/../../escape.txt", content: "x" },
    error: "outside the workspace",
  },
  {
    name: "edit_file through a symlink to a file outside",
    tool: "edit_file",
    args: { path: "link-victim", old_string: "victim", new_string: "pwned" },
    error: "through a symlink",
  },
  {
    name: "delete_file of a symlink to a file outside",
    tool: "delete_file",
    args: { path: "link-victim" },
    error: "through a symlink",
  },
  {
    name: "delete_file of a symlinked directory outside",
    tool: "delete_file",
    args: { path: "link-dir" },
    error: "through a symlink",
  },
  {
    name: "delete_file of the workspace root",
    tool: "delete_file",
    args: { path: "." },
    error: "workspace root cannot be deleted",
  },
  {
    name: "write_file with a NUL in the path",
    tool: "write_file",
    args: { path: "ok.txt\u0000../../x", content: "x" },
    error: "NUL",
  },
  {
    name: "read_file of a URL-encoded dot-dot (a literal name inside, which does not exist)",
    tool: "read_file",
    args: { path: "%2e%2e/secret.txt" },
    error: "does not exist",
  },
];
const controls = [
  call("write_file", { path: join(root, "abs-inside.txt"), content: "inside by absolute path" }),
  call("read_file", { path: "inside.txt" }),
];

let daemon: Daemon;
let events: Collector;
let results: ToolResult[] = [];
beforeAll(async () => {
  writeFileSync(join(outside, "secret.txt"), SECRET);
  writeFileSync(join(outside, "victim.txt"), "victim");
  writeFileSync(join(root, "inside.txt"), "inside");
  mkdirSync(join(root, "sub"));
  symlinkSync(join(outside, "secret.txt"), join(root, "link-file"));
  symlinkSync(outside, join(root, "link-dir"));
  symlinkSync(join(root, "chain2"), join(root, "chain1"));
  symlinkSync(join(outside, "secret.txt"), join(root, "chain2"));
  symlinkSync(join(outside, "victim.txt"), join(root, "link-victim"));
  symlinkSync(join(outside, "planted-by-dangling.txt"), join(root, "dangling"));
  symlinkSync(join(outside, "missing-dir"), join(root, "dangling-dir"));
  symlinkSync(join(root, "loop-b"), join(root, "loop-a"));
  symlinkSync(join(root, "loop-a"), join(root, "loop-b"));
  const script = writeScript([...attacks.map((attack) => call(attack.tool, attack.args)), ...controls, say("done")]);
  daemon = await startDaemon({
    args: [
      "--model=scripted",
      `--script=${script}`,
      "--permission-mode=yolo",
      `--tools-root=${root}`,
      "--max-steps=40",
    ],
  });
  events = collect(`${daemon.baseUrl}/sessions/default/events`);
  await events.waitFor((frame) => frame.event === "usage-update");
  expect((await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "go" })).status).toBe(200);
  const end = await events.waitFor((frame) => frame.event === "turn-complete" || frame.event === "turn-error", 20_000);
  expect(end.event).toBe("turn-complete");
  results = toolResults(events);
  expect(results.length).toBe(attacks.length + controls.length);
});
afterAll(async () => {
  events.close();
  await daemon.sigterm();
});

attacks.forEach((attack, index) => {
  test(`${attack.name} is refused with an error result ("${attack.error}")`, () => {
    const result = results[index];
    expect(result?.name).toBe(attack.tool);
    expect(String(result?.response.error)).toContain(attack.error);
  });
});

test("nothing outside the workspace was read, written, changed or deleted", () => {
  expect(JSON.stringify(results)).not.toContain(SECRET);
  expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe(SECRET);
  expect(readFileSync(join(outside, "victim.txt"), "utf8")).toBe("victim");
  expect(existsSync(join(outside, "planted.txt"))).toBe(false);
  expect(existsSync(join(outside, "planted-by-dangling.txt"))).toBe(false);
  expect(existsSync(join(outside, "missing-dir"))).toBe(false);
  expect(existsSync(join(outside, "..", "escape.txt"))).toBe(false);
  expect(existsSync(join(root, "link-victim"))).toBe(true);
  expect(existsSync(join(root, "link-dir"))).toBe(true);
});

test("paths inside the workspace, absolute or relative, still work (controls)", () => {
  const [write, read] = results.slice(attacks.length);
  expect(write?.response).toMatchObject({ path: "abs-inside.txt", created: true });
  expect(readFileSync(join(root, "abs-inside.txt"), "utf8")).toBe("inside by absolute path");
  expect(read?.response).toMatchObject({ path: "inside.txt", content: "inside" });
});
