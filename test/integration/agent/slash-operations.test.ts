/**
 * The slash operations and titles through a real `spar agent` (echo model, multi-session with a
 * caller table, one daemon for the file, each test its own caller and session):
 * `/slash/done` checkpoints (a durable row, the task note, `checkpoints` and `last_task_note` on
 * `/context`, rebuilt after a kill -9), `/slash/btw` answers from a read-only copy with the status
 * preamble and persists nothing, `/slash/replan` archives the active plan file, the per-caller
 * limiter answers the sixth rapid call 429, `_render` on every slash body, the capabilities
 * frame's `slash_commands`, and `POST /title` (automatic, set, cleared, re-armed, 400s).
 * A scripted model covers what echo cannot: btw while a turn runs, an empty answer, a failure.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PlanFiles } from "../../../src/plans/plan-files.ts";
import { sha256Hex } from "../../../src/surfaces/http/caller-auth.ts";
import { type Daemon, tempDir, waitFor } from "../../support/daemon.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { failWith, modelStreamed, say, stall, writeScript } from "../../support/scripted.ts";
import { type Collector, type Frame, collect } from "../../support/sse-client.ts";

const scope = daemonScope({ per: "file" });
const CALLERS = ["ann", "bea", "cal", "dot", "eli"] as const;
type CallerName = (typeof CALLERS)[number];
const dir = tempDir();
const plansDir = join(dir, "plans");
const sessionDb = join(dir, "sessions.db");
let daemon: Daemon;

function daemonArgs(): string[] {
  const callers = CALLERS.map((identity) => ({ identity, token_sha256: sha256Hex(`tok-${identity}`) }));
  writeFileSync(join(dir, "callers.json"), JSON.stringify({ callers }));
  return ["--model=echo", "--multi-session", `--auth-table=${join(dir, "callers.json")}`, `--plans-dir=${plansDir}`];
}

beforeAll(async () => {
  daemon = await scope.start({ args: daemonArgs(), sessionDb });
});

const auth = (as: CallerName) => ({ authorization: `Bearer tok-${as}` });

/** A write to every path but the read models' (`/status`, `/usage`, `/context`, `/sessions`); no body when `body` is undefined. */
async function send(as: CallerName, path: string, body?: unknown): Promise<Response> {
  const read = /\/(status|usage|context)$|^\/sessions$/.test(path) && body === undefined;
  return fetch(`${daemon.baseUrl}${path}`, {
    method: read ? "GET" : "POST",
    headers: { ...auth(as), "content-type": "application/json" },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
}

async function answer(as: CallerName, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await send(as, path, body);
  const parsed = (await response.json()) as Record<string, unknown>;
  expect([path, response.status, parsed]).toEqual([path, 200, parsed]);
  return parsed;
}

interface Session {
  base: string;
  events: Collector;
  as: CallerName;
}

type Row = { Author: string; CustomMetadata: Record<string, unknown> | null };
const rows = (events: Collector): Row[] =>
  events.frames.filter((frame) => frame.event === "agent").map((frame) => frame.data.event as Row);
const turnEnd = (frame: Frame) => frame.event === "turn-complete" || frame.event === "turn-error";

/** A session owned by `as`, with its event stream open. */
async function session(as: CallerName, id: string): Promise<Session> {
  expect((await send(as, "/sessions", { sessionID: id })).status).toBe(201);
  const events = scope.defer(collect(`${daemon.baseUrl}/sessions/${id}/events`, { headers: auth(as) }), (stream) =>
    stream.close(),
  );
  await events.waitFor((frame) => frame.event === "capabilities");
  return { base: `/sessions/${id}`, events, as };
}

async function turn(target: Session, message: string): Promise<void> {
  const mark = target.events.frames.length;
  expect((await send(target.as, `${target.base}/inject`, { message })).status).toBe(200);
  await target.events.waitFor(turnEnd, 10_000, mark);
  await waitFor(
    async () => ((await answer(target.as, `${target.base}/status`)).turn_in_flight === false ? true : undefined),
    10_000,
    "the turn to end",
  );
}

describe("/slash/done", () => {
  test("a checkpoint: one durable row with the summary and task note, counted on /context; then nothing left to checkpoint", async () => {
    const work = await session("ann", "work");
    await turn(work, "deploy the api");
    const done = await answer("ann", `${work.base}/slash/done`, { note: "  api is live  " });
    expect(done).toMatchObject({ task_note: "api is live", _render: "markdown" });
    expect(done.summary_text).toContain("The task is done");
    expect(typeof done.checkpoint_event_id).toBe("string");
    expect(typeof done.duration_ms).toBe("number");
    expect(await answer("ann", `${work.base}/context`)).toMatchObject({
      compactions: 0,
      checkpoints: 1,
      last_task_note: "api is live",
    });
    await waitFor(
      () => (rows(work.events).some((row) => row.Author === "agent/checkpoint") ? true : undefined),
      5000,
      "the checkpoint row",
    );
    const row = rows(work.events).find((candidate) => candidate.Author === "agent/checkpoint");
    expect(row?.CustomMetadata).toMatchObject({ task_note: "api is live", summary: done.summary_text, model: "echo" });
    // The next turn sends the checkpoint alone before its prompt: echo counts every message.
    await turn(work, "next task");
    const perTurn = (await answer("ann", `${work.base}/usage`)).per_turn as Array<{ input_tokens: number }>;
    const checkpointText = `[Checkpoint: the work above was finished and summarized]\nTask note: api is live\n${done.summary_text}`;
    expect(perTurn[1]?.input_tokens).toBe(Math.ceil((checkpointText.length + "next task".length) / 4));
    // Two messages since: a second checkpoint summarizes them; right after it, nothing is left.
    await answer("ann", `${work.base}/slash/done`, {});
    const skipped = await answer("ann", `${work.base}/slash/done`);
    expect(skipped).toEqual({ duration_ms: skipped.duration_ms, skipped: true, _render: "json" });
    expect((await answer("ann", `${work.base}/context`)).checkpoints).toBe(2);
    expect((await answer("ann", `${work.base}/context`)).last_task_note).toBeUndefined();
    expect((await send("ann", `${work.base}/slash/done`, { note: 5 })).status).toBe(400);
    expect(rows(work.events).some((candidate) => candidate.Author === "agent/context-reduction")).toBe(false);
  });
});

describe("/slash/btw", () => {
  test("answers over a copy of the conversation with the status preamble; no row, nothing added to the conversation", async () => {
    const aside = await session("bea", "aside");
    const prompt = "the rollout of api v2";
    await turn(aside, prompt);
    const headBefore = rows(aside.events).length;
    const usageBefore = (await answer("bea", `${aside.base}/usage`)).overall as Record<string, number>;
    const reply = await answer("bea", `${aside.base}/slash/btw`, { question: "what is rolling out?" });
    expect(reply._render).toBe("markdown");
    // Echo answers with the last user message: the preamble, then the question.
    const text = String(reply.answer);
    for (const line of [
      "state: idle",
      "model: echo",
      "turns: 1",
      "session cost: 0.0000 USD",
      "inbox: 0 waiting",
      "running subagents: none",
    ])
      expect(text).toContain(line);
    expect(text.endsWith("\n\nwhat is rolling out?")).toBe(true);
    // Its usage counts in the session's totals, not as a turn (D357).
    const usageAfter = (await answer("bea", `${aside.base}/usage`)).overall as Record<string, number>;
    expect(usageAfter.turns).toBe(1);
    expect(usageAfter.input_tokens).toBeGreaterThan(usageBefore.input_tokens ?? 0);
    // Nothing persisted: no row, and the next turn's request holds only the real conversation.
    await turn(aside, "again");
    expect(rows(aside.events).length).toBe(2 * headBefore);
    const perTurn = (await answer("bea", `${aside.base}/usage`)).per_turn as Array<{ input_tokens: number }>;
    expect(perTurn[1]?.input_tokens).toBe(Math.ceil((prompt.length * 2 + "again".length) / 4));
    for (const bad of [{ question: "   " }, {}, { question: 7 }]) {
      const refused = await send("bea", `${aside.base}/slash/btw`, bad);
      expect([JSON.stringify(bad), refused.status]).toEqual([JSON.stringify(bad), 400]);
      expect(((await refused.json()) as { error: string }).error).toContain("question");
    }
  });
});

describe("/slash/replan", () => {
  test("archives the newest plan file into archive/ with an audit row; says so when no plan is active", async () => {
    const planner = await session("cal", "planner");
    const none = await answer("cal", `${planner.base}/slash/replan`);
    expect(none).toMatchObject({ plan_was_active: false, _render: "text" });
    expect(String(none.message)).toContain("no active plan");
    const plans = new PlanFiles(plansDir);
    const first = plans.write("planner", "# plan one\n");
    const second = plans.write("planner", "# plan two\n");
    expect(second.path).toBe(join(plansDir, "planner", "plan-2.md"));
    expect(statSync(second.path).mode & 0o777).toBe(0o600);
    expect(statSync(join(plansDir, "planner")).mode & 0o777).toBe(0o700);
    const archived = await answer("cal", `${planner.base}/slash/replan`, { reason: "the api moved" });
    const archivedPath = join(plansDir, "planner", "archive", "plan-2.md");
    expect(archived).toMatchObject({ archived_path: archivedPath, plan_was_active: true, _render: "text" });
    expect(statSync(archivedPath).isFile()).toBe(true);
    expect(plans.active("planner")?.path).toBe(first.path);
    await waitFor(
      () => (rows(planner.events).some((row) => row.Author === "attach/replan") ? true : undefined),
      5000,
      "the replan row",
    );
    expect(rows(planner.events).find((row) => row.Author === "attach/replan")?.CustomMetadata).toMatchObject({
      path: archivedPath,
      reason: "the api moved",
      caller: "cal",
    });
    expect((await answer("cal", `${planner.base}/slash/replan`)).archived_path).toBe(
      join(plansDir, "planner", "archive", "plan-1.md"),
    );
    expect((await answer("cal", `${planner.base}/slash/replan`)).plan_was_active).toBe(false);
    // The next plan continues the numbering past the archived ones.
    expect(plans.write("planner", "# plan three\n").seq).toBe(3);
  });
});

describe("the /slash/* limiter", () => {
  test("per caller: five back to back pass, the sixth is 429 with Retry-After and the JSON body; another caller is unaffected", async () => {
    const limits = await session("dot", "limits");
    for (let call = 0; call < 5; call++) await answer("dot", `${limits.base}/slash/replan`);
    const refused = await send("dot", `${limits.base}/slash/compact`, {});
    expect(refused.status).toBe(429);
    const seconds = Number(refused.headers.get("retry-after"));
    expect(seconds).toBeGreaterThanOrEqual(1);
    expect(seconds).toBeLessThanOrEqual(6);
    expect(await refused.json()).toEqual({ error: "rate limited", retry_after_seconds: seconds });
    const other = await session("eli", "unlimited");
    expect((await answer("eli", `${other.base}/slash/compact`)).skipped).toBe(true);
  });
});

describe("capabilities and _render", () => {
  test("slash_commands lists exactly the slash routes; compact carries _render", async () => {
    const work = { base: "/sessions/work" };
    const events = scope.defer(collect(`${daemon.baseUrl}${work.base}/events`, { headers: auth("ann") }), (stream) =>
      stream.close(),
    );
    const capabilities = await events.waitFor((frame) => frame.event === "capabilities");
    expect(capabilities.data.slash_commands).toEqual(["btw", "compact", "done", "replan", "subagent"]);
    expect(await answer("ann", `${work.base}/slash/compact`, {})).toEqual({
      duration_ms: expect.any(Number),
      skipped: true,
      _render: "json",
    });
  });
});

describe("POST /title", () => {
  const row = async (id: string) =>
    ((await answer("eli", "/sessions")).sessions as Array<{ sessionID: string; title?: string }>).find(
      (listed) => listed.sessionID === id,
    );

  test("automatic from the first prompt, set, capped, cleared and re-armed; an omitted key is 400", async () => {
    const named = await session("eli", "named");
    expect((await row("named"))?.title).toBeUndefined();
    await turn(named, "  investigate the   flaky test in ci ");
    expect((await row("named"))?.title).toBe("investigate the flaky test in ci");
    expect(await answer("eli", `${named.base}/title`, { title: "  Release 2.0 rollout  " })).toEqual({
      session: "named",
      title: "Release 2.0 rollout",
      persisted: true,
    });
    expect((await row("named"))?.title).toBe("Release 2.0 rollout");
    // A set title is kept by later turns.
    await turn(named, "another prompt");
    expect((await row("named"))?.title).toBe("Release 2.0 rollout");
    const long = `${"🚀".repeat(10)}${"x".repeat(70)}`;
    expect((await answer("eli", `${named.base}/title`, { title: long })).title).toBe(
      `${"🚀".repeat(10)}${"x".repeat(50)}`,
    );
    for (const bad of [{}, { title: 5 }, { name: "x" }, "null"]) {
      const refused = await send("eli", `${named.base}/title`, bad);
      expect([JSON.stringify(bad), refused.status]).toEqual([JSON.stringify(bad), 400]);
    }
    expect((await send("eli", `${named.base}/title`, "")).status).toBe(400);
    expect(await answer("eli", `${named.base}/title`, { title: "" })).toEqual({ session: "named", persisted: true });
    expect((await row("named"))?.title).toBeUndefined();
    await turn(named, "the next prompt names it");
    expect((await row("named"))?.title).toBe("the next prompt names it");
    // Another caller's session: the masked 404.
    expect((await send("dot", `${named.base}/title`, { title: "mine" })).status).toBe(404);
  });
});

describe("after a kill -9", () => {
  test("checkpoints, the task note and titles are rebuilt from the store", async () => {
    const before = await answer("ann", "/sessions/work/context");
    await daemon.kill9();
    daemon = await scope.start({ args: daemonArgs(), sessionDb });
    expect(await answer("ann", "/sessions/work/context")).toEqual(before);
    const listed = (await answer("eli", "/sessions")).sessions as Array<{ sessionID: string; title?: string }>;
    expect(listed.find((entry) => entry.sessionID === "named")?.title).toBe("the next prompt names it");
  });
});

describe("with a scripted model", () => {
  let scripted: Daemon;
  let events: Collector;
  const base = () => `${scripted.baseUrl}/sessions/default`;
  const post = (suffix: string, body: unknown) =>
    fetch(`${base()}/${suffix}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  beforeAll(async () => {
    const script = writeScript([
      stall("working on it", 2000, "deployed"),
      say("It is deploying the api."),
      say(""),
      failWith("UNAVAILABLE", "the backend is down"),
    ]);
    scripted = await scope.start({ args: ["--model=scripted", `--script=${script}`, `--plans-dir=${plansDir}`] });
    events = scope.defer(collect(`${base()}/events`), (stream) => stream.close());
    await events.waitFor((frame) => frame.event === "capabilities");
  });
  afterAll(() => events.close());

  test("btw answers while a turn runs and the turn runs on; done waits for it (409); an empty answer; a failed call is 500", async () => {
    expect((await post("inject", { message: "deploy the api" })).status).toBe(200);
    await events.waitFor(modelStreamed("working on it"));
    expect((await post("slash/done", {})).status).toBe(409);
    const aside = await post("slash/btw", { question: "what are you doing?" });
    expect(await aside.json()).toEqual({ answer: "It is deploying the api.", _render: "markdown" });
    const status = (await (await fetch(`${base()}/status`)).json()) as { turn_in_flight: boolean };
    expect(status.turn_in_flight).toBe(true);
    const end = await events.waitFor(turnEnd, 10_000);
    expect(end.event).toBe("turn-complete");
    expect(await (await post("slash/btw", { question: "anything else?" })).json()).toEqual({
      empty: true,
      _render: "json",
    });
    const failed = await post("slash/btw", { question: "and now?" });
    expect(failed.status).toBe(500);
    expect(((await failed.json()) as { error: string }).error).toContain("the backend is down");
  }, 20_000);
});
