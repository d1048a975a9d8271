/**
 * Builtin tools in a real daemon, driven by scripted tool calls in `yolo` mode: write_file then
 * read_file with real outputs on the result rows, GET /tools, a bash timeout that kills the
 * command's whole process group (checked by pid), output caps, a disabled tool, bad input that
 * answers an error while the turn goes on, a path outside the workspace, bash killed by an
 * interrupt and by SIGTERM (no orphan after exit), and fetch_url through the outbound guard
 * in the tool-host worker: a local server reached only through `--outbound-allow`, a malformed
 * entry refused at startup.
 */
import { expect, test } from "bun:test";
import { daemonScope } from "../../support/daemon-scope.ts";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { postJson, tempDir, waitFor } from "../../support/daemon.ts";
import { type Collector, collect } from "../../support/sse-client.ts";
import { call, toolResults, writeScript } from "../../support/scripted.ts";

const scope = daemonScope();

const say = (text: string) => ({
  request: {},
  responses: [{ content: { role: "model", parts: [{ text }] }, turnComplete: true }],
});

async function start(lines: unknown[], args: string[] = []) {
  const root = tempDir("spar-tools-");
  const daemon = await scope.start({
    args: [
      "--model=scripted",
      `--script=${writeScript(lines)}`,
      "--permission-mode=yolo",
      `--tools-root=${root}`,
      ...args,
    ],
  });
  const events = collect(`${daemon.baseUrl}/sessions/default/events`);
  scope.defer(events, (stream) => stream.close());
  await events.waitFor((frame) => frame.event === "usage-update");
  return { daemon, events, root, base: `${daemon.baseUrl}/sessions/default` };
}

/** The pid a command wrote to `file`, once the whole line is there (the file exists before `echo` fills it). */
function writtenPid(file: string): number | undefined {
  if (!existsSync(file)) return undefined;
  const text = readFileSync(file, "utf8");
  const pid = Number(text.trim());
  return text.endsWith("\n") && Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

/** Gone, or a zombie nobody reaped (this sandbox's init does not reap). */
function processGone(pid: number): boolean {
  try {
    return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return true;
  }
}

async function runTurn(events: Collector, base: string, message = "go") {
  const mark = events.frames.length;
  expect((await postJson(`${base}/inject`, { message })).status).toBe(200);
  return await events.waitFor((frame) => frame.event === "turn-complete" || frame.event === "turn-error", 15_000, mark);
}

test("write_file then read_file: the file is on disk and the result rows carry the real outputs; GET /tools lists the builtins", async () => {
  const { events, root, base } = await start([
    call("write_file", { path: "notes/a.txt", content: "hello tools\nline 2\n" }),
    call("read_file", { path: "notes/a.txt", offset: 2 }),
    say("done"),
  ]);
  const tools = (await (await fetch(`${base}/tools`)).json()) as { tools: Array<Record<string, unknown>> };
  expect(tools.tools.map((tool) => tool.name)).toEqual([
    "bash",
    "read_file",
    "write_file",
    "edit_file",
    "delete_file",
    "fetch_url",
    // The loop-control tools (D362), offered unless --wake-loop=false.
    "schedule_next_turn",
    "return_result",
    "report_alert",
  ]);
  expect(
    tools.tools.every(
      (tool) => tool.source === "builtin" && typeof tool.description === "string" && tool.server === undefined,
    ),
  ).toBe(true);
  const end = await runTurn(events, base);
  expect(end.event).toBe("turn-complete");
  expect(readFileSync(join(root, "notes/a.txt"), "utf8")).toBe("hello tools\nline 2\n");
  const results = toolResults(events);
  expect(results[0]).toMatchObject({
    name: "write_file",
    response: { path: "notes/a.txt", bytes_written: 19, created: true },
  });
  expect(results[0]?.response.error).toBeUndefined();
  expect(results[1]).toMatchObject({
    name: "read_file",
    response: { path: "notes/a.txt", content: "line 2\n", size_bytes: 19 },
  });
  expect(results[1]?.response.truncated).toBeUndefined();
}, 20_000);

test("bash past its timeout: the command and its background child are killed, partial output returned, the turn goes on", async () => {
  const { events, base } = await start([
    call("bash", { command: "sleep 30 & echo child $!; echo self $$; wait", timeout_seconds: 1 }),
    say("after"),
  ]);
  const started = Date.now();
  const end = await runTurn(events, base);
  expect(end.event).toBe("turn-complete");
  expect(Date.now() - started).toBeLessThan(6000);
  const result = toolResults(events)[0];
  expect(result?.response.error).toContain("timed out after 1 s");
  expect(result?.response.exit_code).toBeNull();
  // The row records how long the call ran (about the 1 s timeout).
  expect(Number(result?.response.latency_ms)).toBeGreaterThanOrEqual(900);
  const stdout = String(result?.response.stdout);
  const child = Number(/child (\d+)/.exec(stdout)?.[1]);
  const self = Number(/self (\d+)/.exec(stdout)?.[1]);
  expect(child).toBeGreaterThan(0);
  expect(self).toBeGreaterThan(0);
  await waitFor(() => (processGone(child) && processGone(self) ? true : undefined), 3000, "bash and its child to die");
}, 20_000);

test("GET /status names the tool running now as current_tool, and drops it when the tool ends", async () => {
  const { events, base } = await start([call("bash", { command: "sleep 1.5; echo hi" }), say("done")]);
  const statusOf = async () => (await (await fetch(`${base}/status`)).json()) as Record<string, unknown>;
  expect((await statusOf()).current_tool).toBeUndefined();
  const mark = events.frames.length;
  expect((await postJson(`${base}/inject`, { message: "go" })).status).toBe(200);
  const running = await waitFor(
    async () => {
      const status = await statusOf();
      return status.current_tool === undefined ? undefined : status;
    },
    5000,
    "current_tool while bash runs",
  );
  expect(running).toMatchObject({ state: "running", turn_in_flight: true, current_tool: "bash" });
  await events.waitFor((frame) => frame.event === "turn-complete", 15_000, mark);
  expect((await statusOf()).current_tool).toBeUndefined();
});

test("output caps: bash keeps 32 KiB per stream, read_file 256 KiB, each marked truncated", async () => {
  const { events, root, base } = await start(
    [
      call("bash", { command: "head -c 100000 /dev/zero | tr '\\0' a; echo oops >&2" }),
      call("read_file", { path: "big.txt" }),
      say("capped"),
    ],
    ["--tools-digest=passthrough"],
  );
  writeFileSync(join(root, "big.txt"), "b".repeat(300_000));
  await runTurn(events, base);
  const [bash, read] = toolResults(events);
  expect(String(bash?.response.stdout)).toBe("a".repeat(32 * 1024));
  expect(bash?.response.stderr).toBe("oops\n");
  expect(bash?.response.exit_code).toBe(0);
  expect(bash?.response.truncated).toEqual({
    stdout_bytes: 100_000,
    stderr_bytes: 5,
    kept_bytes_per_stream: 32 * 1024,
  });
  expect(String(read?.response.content).length).toBe(256 * 1024);
  expect(read?.response.truncated).toBe(true);
  expect(read?.response.size_bytes).toBe(300_000);
}, 20_000);

test("a disabled tool is not offered and does not run; bad input and a path outside the workspace are error results and the turn goes on", async () => {
  const { events, root, base } = await start(
    [
      call("bash", { command: "touch marker" }),
      call("write_file", { path: "x.txt" }),
      call("read_file", { path: "../../etc/passwd" }),
      call("write_file", { path: "ok.txt", content: "still here" }),
      say("finished"),
    ],
    ["--tools-disable=bash,fetch_url"],
  );
  const listed = (await (await fetch(`${base}/tools`)).json()) as { tools: Array<{ name: string }> };
  expect(listed.tools.map((tool) => tool.name)).toEqual([
    "read_file",
    "write_file",
    "edit_file",
    "delete_file",
    "schedule_next_turn",
    "return_result",
    "report_alert",
  ]);
  const end = await runTurn(events, base);
  expect(end.event).toBe("turn-complete");
  const [bash, badInput, outside, good] = toolResults(events);
  expect(bash?.response.error).toBe('tool "bash" is not available in this session');
  expect(existsSync(join(root, "marker"))).toBe(false);
  expect(String(badInput?.response.error)).toStartWith("invalid input for write_file: content");
  expect(existsSync(join(root, "x.txt"))).toBe(false);
  expect(String(outside?.response.error)).toContain("outside the workspace");
  expect(good?.response).toMatchObject({ path: "ok.txt", bytes_written: 10, created: true });
  expect(readFileSync(join(root, "ok.txt"), "utf8")).toBe("still here");
  const text = events.frames.filter((frame) => frame.event === "text-delta").map((frame) => frame.data.text);
  expect(text).toContain("finished");
}, 20_000);

test("an interrupt kills a running bash; SIGTERM kills one too and leaves no orphan", async () => {
  const { daemon, events, root, base } = await start([
    call("bash", { command: "echo $$ > first.pid; sleep 30" }),
    call("bash", { command: "echo $$ > second.pid; sleep 30" }),
  ]);
  await postJson(`${base}/inject`, { message: "first" });
  const first = await waitFor(() => writtenPid(join(root, "first.pid")), 5000, "first pid");
  expect(processGone(first)).toBe(false);
  expect((await postJson(`${base}/interrupt`, { hold: false })).status).toBe(200);
  const canceled = await events.waitFor((frame) => frame.event === "turn-error");
  expect(canceled.data.kind).toBe("canceled");
  await waitFor(() => (processGone(first) ? true : undefined), 3000, "the interrupted bash to die");
  await postJson(`${base}/inject`, { message: "second" });
  const second = await waitFor(() => writtenPid(join(root, "second.pid")), 5000, "second pid");
  expect(await daemon.sigterm()).toBe(0);
  expect(processGone(second)).toBe(true);
}, 30_000);

test("kill -9 of the daemon takes a running bash with it: the command never finishes its effect after the restart reported it cut off", async () => {
  const { daemon, root, base } = await start([
    call("bash", { command: "echo $$ > run.pid; sleep 2; echo $BASHPID > child.pid; sleep 1; echo done > marker" }),
  ]);
  await postJson(`${base}/inject`, { message: "go" });
  const pid = await waitFor(() => writtenPid(join(root, "run.pid")), 5000, "bash pid");
  expect(processGone(pid)).toBe(false);
  await daemon.kill9();
  await waitFor(() => (processGone(pid) ? true : undefined), 3000, "the orphaned bash to die with the daemon");
  // Time under test: past the command's own schedule (child.pid at 2 s, marker at 3 s).
  await Bun.sleep(3500);
  expect(existsSync(join(root, "marker"))).toBe(false);
  expect(existsSync(join(root, "child.pid"))).toBe(false);
}, 30_000);

test("bash starts with an allow-listed environment: an unlisted secret is absent, a listed variable passes, the daemon's own token never does", async () => {
  const root = tempDir("spar-tools-");
  const token = "tools-test-token";
  const script = writeScript([
    call("bash", {
      command:
        'echo "token=[$SPAR_TOOLS_TOKEN] other=[$SPAR_TOOLS_OTHER] aws=[$AWS_SECRET_ACCESS_KEY] path=[${PATH:+set}] lc=[$LC_SPAR]"',
    }),
    say("env checked"),
  ]);
  const daemon = await scope.start({
    args: [
      "--model=scripted",
      `--script=${script}`,
      "--permission-mode=yolo",
      `--tools-root=${root}`,
      "--attach-token=SPAR_TOOLS_TOKEN",
      "--tools-env-passthrough=SPAR_TOOLS_*",
    ],
    env: {
      SPAR_TOOLS_TOKEN: token,
      SPAR_TOOLS_OTHER: "visible",
      AWS_SECRET_ACCESS_KEY: "from-the-deployment",
      LC_SPAR: "locale",
    },
  });
  const headers = { "x-attach-token": token };
  const events = collect(`${daemon.baseUrl}/sessions/default/events`, { headers });
  scope.defer(events, (stream) => stream.close());
  await events.waitFor((frame) => frame.event === "usage-update");
  expect((await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "env" }, headers)).status).toBe(200);
  await events.waitFor((frame) => frame.event === "turn-complete", 15_000);
  expect(toolResults(events)[0]?.response.stdout).toBe("token=[] other=[visible] aws=[] path=[set] lc=[locale]\n");
}, 20_000);

test("fetch_url in the daemon reaches a local server only through --outbound-allow; a credential in the URL is redacted", async () => {
  const local = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (request) => new Response(`local ${new URL(request.url).pathname}`),
  });
  try {
    const page = `http://127.0.0.1:${local.port}/page`;
    const lines = [
      call("fetch_url", { url: page }),
      call("fetch_url", { url: `http://bob:hunter2@127.0.0.2:${local.port}/other` }),
      say("fetched"),
    ];
    const open = await start(lines, ["--outbound-allow=127.0.0.1, *.corp.example"]);
    expect((await runTurn(open.events, open.base)).event).toBe("turn-complete");
    const [reached, refused] = toolResults(open.events);
    expect(reached?.response).toMatchObject({ url: page, status: 200, body: "local /page" });
    expect(refused?.response).toMatchObject({
      url: `http://***@127.0.0.2:${local.port}/other`,
      error: "refused: 127.0.0.2 is a loopback address in 127.0.0.0/8, not in the outbound allow list",
    });
    expect(JSON.stringify(toolResults(open.events))).not.toContain("hunter2");
    const closed = await start([call("fetch_url", { url: page }), say("refused")]);
    await runTurn(closed.events, closed.base);
    expect(toolResults(closed.events)[0]?.response.error).toBe(
      "refused: 127.0.0.1 is a loopback address in 127.0.0.0/8, not in the outbound allow list",
    );
  } finally {
    local.stop(true);
  }
}, 30_000);
