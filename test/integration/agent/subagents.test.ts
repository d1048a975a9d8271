/**
 * Subagents through the real daemon (D351), one scripted daemon shared by the file, its model
 * calls consumed in order (the parent's and each instance's alike): a synchronous call from the
 * parent's model, a refused ungranted tool, a background launch reporting back with a `wake`,
 * the rows paged out of the log, stop of a running and of a finished instance, /interrupt with
 * stop_subagents, and the background drain at shutdown.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Daemon, postJson, startDaemon, tempDir, waitFor } from "../../support/daemon.ts";
import { type Collector, collect } from "../../support/sse-client.ts";
import { call, say, toolResults, writeScript } from "../../support/scripted.ts";
import { mastWebClient } from "../../support/mast-web-client.ts";

const SCRIPT = [
  call("researcher", { task: "count the files" }), // parent
  call("bash", { command: "echo not-granted" }), // researcher: bash is not granted
  say("the answer is 42"), // researcher
  say("researcher says 42"), // parent
  say("bg result"), // bg.researcher
  say("noted"), // parent, woken by the report
  call("bash", { command: "sleep 30" }), // bg.sleeper: stopped by name
  call("bash", { command: "sleep 30" }), // bg.sleeper-2: stopped by /interrupt
  call("bash", { command: "sleep 30" }), // bg.sleeper-3: drained at shutdown
];

const ROSTER = [
  { name: "researcher", description: "Looks things up.", tools: ["read_*"] },
  { name: "sleeper", description: "Runs commands.", tools: ["bash"], parent_tool: false },
];

let daemon: Daemon;
let events: Collector;
let base: string;

beforeAll(async () => {
  const cwd = tempDir();
  mkdirSync(join(cwd, ".agents"));
  writeFileSync(join(cwd, ".agents", "config.json"), JSON.stringify({ agent: { subagents: ROSTER } }));
  daemon = await startDaemon({
    cwd,
    args: ["--model=scripted", `--script=${writeScript(SCRIPT)}`, "--permission-mode=yolo"],
  });
  base = `${daemon.baseUrl}/sessions/default`;
  events = collect(`${base}/events`);
  await events.waitFor((frame) => frame.event === "usage-update");
});

afterAll(async () => {
  events.close();
  if (daemon.process.exitCode === null) await daemon.sigterm();
});

const getJson = async (path: string) => {
  const response = await fetch(`${base}${path}`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

type Instance = { id: string; name: string; status: string; mode: string; last_report?: string };
const instances = async () => (await getJson("/agents")).body.agents as Instance[];
const instance = async (id: string) => (await instances()).find((row) => row.id === id);

/** The sleeper's `sleep 30` is running (the parent's gate names it as its current tool). */
const sleeping = () =>
  waitFor(async () => ((await getJson("/status")).body.current_tool === "bash" ? true : undefined), 10_000);

test("the roster and the parent tool: /subagents with modes and granted tools, /tools lists the subagent", async () => {
  const { body } = await getJson("/subagents");
  expect(body.subagents).toEqual([
    {
      name: "researcher",
      description: "Looks things up.",
      model: "scripted",
      root: "spar",
      modes: ["sync", "async"],
      tools: [{ name: "read_file", description: expect.any(String), source: "builtin" }],
    },
    {
      name: "sleeper",
      description: "Runs commands.",
      model: "scripted",
      root: "spar",
      modes: ["async"],
      tools: [{ name: "bash", description: expect.any(String), source: "builtin" }],
    },
  ]);
  const tools = (await getJson("/tools")).body.tools as Array<{ name: string; source: string }>;
  expect(tools.filter((tool) => tool.source === "subagent").map((tool) => tool.name)).toEqual(["researcher"]);
});

test("a sync call: the subagent runs on the turn path, is refused an ungranted tool, and answers the parent", async () => {
  const from = events.frames.length;
  expect((await postJson(`${base}/inject`, { message: "ask the researcher" })).status).toBe(200);
  await events.waitFor((frame) => frame.event === "turn-complete", 10_000, from);
  const results = toolResults(events).filter((result) => result.name === "researcher");
  expect(results.at(-1)?.response).toMatchObject({
    agent: "researcher",
    branch: "researcher",
    status: "completed",
    result: "the answer is 42",
  });
  // The instance's own rows are not on the parent's stream.
  const branches = events.frames
    .filter((frame) => frame.event === "agent")
    .map((frame) => (frame.data.event as { Branch: string }).Branch);
  expect(branches.every((branch) => branch === "")).toBe(true);
  expect(await instance("researcher")).toMatchObject({ name: "researcher", status: "completed", mode: "sync" });
  const page = (await getJson("/agents/researcher/events")).body;
  expect(page.branches).toEqual(["researcher", "bg.researcher", "sub.researcher", "remote.researcher"]);
  const rows = (page.events as Array<{ event: Record<string, unknown> }>).map((row) => row.event);
  expect(rows.every((row) => row.Branch === "researcher")).toBe(true);
  const refused = rows
    .flatMap(
      (row) =>
        (row.Content as { parts: Array<{ functionResponse?: { name: string; response: unknown } }> })?.parts ?? [],
    )
    .find((part) => part.functionResponse?.name === "bash");
  expect(refused?.functionResponse?.response).toMatchObject({ error: expect.stringContaining("not granted") });
  const context = (await getJson("/context")).body;
  expect(context.subtask_turns).toBe(1);
});

test("a background launch reports back to the parent with a wake frame and a prompt", async () => {
  const from = events.frames.length;
  const launched = await postJson(`${base}/slash/subagent`, { name: "researcher", goal: "a background question" });
  expect(launched.status).toBe(200);
  expect(await launched.json()).toMatchObject({ name: "researcher", id: "bg.researcher", _render: "json" });
  await events.waitFor((frame) => frame.event === "wake", 10_000, from);
  await events.waitFor((frame) => frame.event === "turn-complete", 10_000, from);
  const prompt = events.frames
    .slice(from)
    .filter((frame) => frame.event === "agent")
    .map((frame) => frame.data.event as { Author: string; Content: { parts: Array<{ text?: string }> } | null })
    .find((event) => event.Author === "user");
  expect(prompt?.Content?.parts[0]?.text).toContain("[subagent bg.researcher completed]\nbg result");
  expect(await instance("bg.researcher")).toMatchObject({
    status: "completed",
    mode: "async",
    last_report: "bg result",
  });
});

test("events page across truncated with next_since; an unknown name is 404 naming what exists; a dotted name 400", async () => {
  const whole = (await getJson("/agents/researcher/events?limit=5000")).body;
  const all = (whole.events as Array<{ seq: number }>).map((row) => row.seq);
  expect(all.length).toBeGreaterThan(3);
  expect(whole.truncated).toBe(false);
  const paged: number[] = [];
  let since = 0;
  for (let pages = 0; pages < all.length; pages++) {
    const page = (await getJson(`/agents/researcher/events?since=${since}&limit=2`)).body;
    paged.push(...(page.events as Array<{ seq: number }>).map((row) => row.seq));
    since = page.next_since as number;
    if (!page.truncated) break;
  }
  expect(paged).toEqual(all);
  const missing = await getJson("/agents/nobody/events");
  expect(missing.status).toBe(404);
  expect(missing.body).toMatchObject({
    agent: "nobody",
    parent_session_id: "default",
    branches: ["nobody", "bg.nobody", "sub.nobody", "remote.nobody"],
    available: ["researcher", "sleeper"],
  });
  expect((await getJson("/agents/bg.researcher/events")).status).toBe(400);
  // A configured name never launched answers 200 with nothing.
  expect((await getJson("/agents/sleeper/events")).body).toMatchObject({ events: [], truncated: false });
});

test("the mast-web dashboard's own client reads the subagent catalog, the instances and a drill-down page", async () => {
  const AttachClient = mastWebClient();
  const client = new AttachClient({ endpoint: daemon.baseUrl, sessionId: "default" });
  const catalog = await client.listConfiguredSubagents();
  expect(catalog.map((entry) => [entry.name, entry.modes])).toEqual([
    ["researcher", ["sync", "async"]],
    ["sleeper", ["async"]],
  ]);
  const live = await client.listAgents();
  expect(live.map((row) => row.id)).toEqual(["researcher", "bg.researcher"]);
  const page = await client.getSubagentEvents("spar", "researcher", { limit: 2 });
  expect(page).toMatchObject({ agent: "researcher", parent_session_id: "default", truncated: true });
  expect(page.events).toHaveLength(2);
  await expect(client.getSubagentEvents("spar", "ghost")).rejects.toBeInstanceOf(AttachClient.PermanentStreamError);
});

test("stop: a running instance stops; once finished stopped:false; a name never started is 404", async () => {
  expect((await postJson(`${base}/slash/subagent`, { name: "sleeper", goal: "sleep" })).status).toBe(200);
  await sleeping();
  expect(await instance("bg.sleeper")).toMatchObject({ status: "running" });
  const stop = await postJson(`${base}/agents/bg.sleeper/stop`);
  expect(await stop.json()).toEqual({ agent: "bg.sleeper", stopped: true, status: "stopped", session: "default" });
  expect(await instance("bg.sleeper")).toMatchObject({ status: "stopped" });
  const again = await postJson(`${base}/agents/sleeper/stop`);
  expect(await again.json()).toMatchObject({ stopped: false });
  expect((await postJson(`${base}/agents/nobody/stop`)).status).toBe(404);
});

test("/interrupt with stop_subagents names the running instance and stops it", async () => {
  expect((await postJson(`${base}/slash/subagent`, { name: "sleeper", goal: "sleep again" })).status).toBe(200);
  await sleeping();
  const response = await postJson(`${base}/interrupt`, { hold: false, stop_subagents: true });
  expect(response.headers.get("x-interrupted")).toBe("nothing-in-flight");
  expect(await response.json()).toMatchObject({
    running_subagents: [{ name: "sleeper", id: "bg.sleeper-2" }],
    stopped_subagents: [{ name: "sleeper", id: "bg.sleeper-2" }],
  });
  expect(await instance("bg.sleeper-2")).toMatchObject({ status: "stopped" });
});

test("an unknown subagent on /slash/subagent is 404 naming the roster", async () => {
  const response = await postJson(`${base}/slash/subagent`, { name: "ghost", goal: "x" });
  expect(response.status).toBe(404);
  expect(((await response.json()) as { error: string }).error).toContain("researcher, sleeper");
});

test("SIGTERM: a background subagent still running gets its 5 s, then is stopped and logged; exit 0", async () => {
  expect((await postJson(`${base}/slash/subagent`, { name: "sleeper", goal: "sleep at shutdown" })).status).toBe(200);
  await sleeping();
  const started = performance.now();
  expect(await daemon.sigterm()).toBe(0);
  const elapsed = performance.now() - started;
  expect(elapsed).toBeGreaterThan(4000);
  expect(elapsed).toBeLessThan(20_000);
  expect(daemon.log()).toContain("subagents still running after 5000 ms were stopped: bg.sleeper-3");
});

test("kill -9 while a background subagent runs: the restart writes its cut row and auto-continue carries it on", async () => {
  const cwd = tempDir();
  mkdirSync(join(cwd, ".agents"));
  writeFileSync(join(cwd, ".agents", "config.json"), JSON.stringify({ agent: { subagents: ROSTER } }));
  const flags = ["--model=scripted", "--permission-mode=yolo"];
  const first = await startDaemon({
    cwd,
    args: [...flags, `--script=${writeScript([call("bash", { command: "sleep 30" })])}`],
  });
  const at = `${first.baseUrl}/sessions/default`;
  expect((await postJson(`${at}/slash/subagent`, { name: "sleeper", goal: "sleep through a crash" })).status).toBe(200);
  await waitFor(async () => {
    const status = (await (await fetch(`${at}/status`)).json()) as { current_tool?: string };
    return status.current_tool === "bash" ? true : undefined;
  });
  await first.kill9();
  // Each daemon replays its script from the top: the restarted one gets its own.
  const second = await startDaemon({
    cwd,
    sessionDb: first.sessionDb,
    args: [...flags, `--script=${writeScript([say("carried on"), say("noted after restart")])}`],
  });
  try {
    const again = `${second.baseUrl}/sessions/default`;
    const done = await waitFor(async () => {
      const agents = ((await (await fetch(`${again}/agents`)).json()) as { agents: Instance[] }).agents;
      const sleeper = agents.find((row) => row.id === "bg.sleeper");
      return sleeper?.status === "completed" ? sleeper : undefined;
    });
    expect(done.last_report).toBe("carried on");
    const replay = collect(`${again}/events?since=0`);
    try {
      const ends = await waitFor(() => {
        const rows = replay.frames
          .filter((frame) => frame.event === "agent")
          .map((frame) => (frame.data.event as { CustomMetadata: Record<string, unknown> | null }).CustomMetadata)
          .filter((meta) => meta?.event === "subagent-end");
        return rows.length >= 2 ? rows : undefined;
      });
      expect(ends.map((meta) => meta?.status)).toEqual(["cut", "completed"]);
    } finally {
      replay.close();
    }
    const rows = (
      (await (await fetch(`${again}/agents/sleeper/events`)).json()) as {
        events: Array<{ event: { Author: string; Content: { parts: Array<Record<string, unknown>> } | null } }>;
      }
    ).events.map((row) => row.event);
    // The cut call was answered (repaired) before the continue note, which the instance answered.
    const repaired = rows.findIndex((row) => row.Author === "agent/repair");
    const note = rows.findIndex((row) => row.Author === "agent/auto-continue");
    expect(repaired).toBeGreaterThan(0);
    expect(note).toBeGreaterThan(repaired);
  } finally {
    await second.sigterm();
  }
}, 40_000);
