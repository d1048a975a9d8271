/**
 * The agent's durability scenarios, run on each session store driver (sqlite in
 * resume-and-crash.test.ts, PostgreSQL in agent-postgres.test.ts): a real SSE client's
 * Last-Event-ID reconnect across kill -9 and a restart loses and repeats nothing; a daemon killed
 * mid-turn with a message waiting comes back with history, owner and inbox intact and drains the
 * message once. `store` is where the daemons keep their sessions (absent sessionDb: a fresh sqlite file).
 */
import { expect } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { DaemonScope } from "./daemon-scope.ts";
import { type Daemon, postJson, tempDir, waitFor } from "./daemon.ts";
import { type Frame, collect } from "./sse-client.ts";

/** The store flags both daemons of a scenario get: the `--session-db` value and any driver flag. */
export interface AgentStore {
  sessionDb?: string;
  args?: string[];
}

export function agentSeqs(frames: Frame[]): number[] {
  return frames.filter((frame) => frame.event === "agent").map((frame) => (frame.data as { seq: number }).seq);
}

export async function turns(daemon: Daemon, session = "default"): Promise<number> {
  const usage = (await (await fetch(`${daemon.baseUrl}/sessions/${session}/usage`)).json()) as {
    overall: { turns: number };
  };
  return usage.overall.turns;
}

export async function injectAndWait(daemon: Daemon, message: string, expectedTurns: number): Promise<void> {
  expect((await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message })).status).toBe(200);
  await waitFor(
    async () => ((await turns(daemon)) >= expectedTurns ? true : undefined),
    10_000,
    `turn ${expectedTurns}`,
  );
}

/** kill -9 during delivery: the client's Last-Event-ID reconnect to the restarted daemon loses and repeats nothing. */
export async function killNineDuringDelivery(scope: DaemonScope, store: AgentStore): Promise<void> {
  const first = await scope.start({ ...store });
  const stream = collect(`${first.baseUrl}/sessions/default/events`);
  await injectAndWait(first, "before crash 1", 1);
  await injectAndWait(first, "before crash 2", 2);
  await stream.waitFor((frame) => frame.event === "agent" && (frame.data as { seq: number }).seq === 4);
  const capabilitiesBefore = stream.frames.filter((frame) => frame.event === "capabilities").length;
  // Frames after this mark come from the reconnect, which may land while the next inject runs.
  const mark = stream.frames.length;
  await first.kill9();

  const second = await scope.start({ ...store, sessionDb: first.sessionDb, listen: `127.0.0.1:${first.port}` });
  // Rows 5-6 are committed before the client is back: they must arrive by replay from Last-Event-ID 4.
  await injectAndWait(second, "while the client reconnects", 3);
  await stream.waitFor((frame) => frame.event === "capabilities", 15_000, mark);
  expect(stream.frames.filter((frame) => frame.event === "capabilities").length).toBe(capabilitiesBefore + 1);
  await stream.waitFor((frame) => frame.event === "agent" && (frame.data as { seq: number }).seq === 6);
  await injectAndWait(second, "after reconnect", 4);
  await stream.waitFor((frame) => frame.event === "agent" && (frame.data as { seq: number }).seq === 8);
  stream.close();
  expect(agentSeqs(stream.frames)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  const rows = stream.frames.filter((frame) => frame.event === "agent");
  expect(rows.map((frame) => frame.id)).toEqual(["1", "2", "3", "4", "5", "6", "7", "8"]);
}

/** kill -9 mid-turn with a message waiting: history, owner and inbox survive; the waiting message is drained once. */
export async function killNineMidTurnWithInbox(scope: DaemonScope, store: AgentStore): Promise<void> {
  const dir = tempDir();
  const script = join(dir, "script.jsonl");
  writeFileSync(
    script,
    [
      "# turn 0 is slow, so the daemon can be killed in the middle of it",
      JSON.stringify({
        request: {},
        responses: [{ delayMs: 1500, content: { role: "model", parts: [{ text: "slow reply" }] }, turnComplete: true }],
      }),
      JSON.stringify({
        request: {},
        responses: [{ content: { role: "model", parts: [{ text: "quick reply" }] }, turnComplete: true }],
      }),
      "",
    ].join("\n"),
  );
  const args = [...(store.args ?? []), "--multi-session", "--model=scripted", `--script=${script}`];
  const first = await scope.start({ ...store, args });
  expect((await postJson(`${first.baseUrl}/sessions`, { sessionID: "crash-1" })).status).toBe(201);
  const stream = collect(`${first.baseUrl}/sessions/crash-1/events`);
  await stream.waitFor((frame) => frame.event === "capabilities");
  const one = await postJson(`${first.baseUrl}/sessions/crash-1/inject`, { message: "first" });
  expect(one.status).toBe(200);
  await stream.waitFor((frame) => frame.event === "agent" && (frame.data as { seq: number }).seq === 1);
  const two = (await (await postJson(`${first.baseUrl}/sessions/crash-1/inject`, { message: "second" })).json()) as {
    prompt_id: string;
  };
  await stream.waitFor(
    (frame) => frame.event === "inbox" && frame.data.state === "queued" && frame.data.prompt_id === two.prompt_id,
  );
  stream.close();
  await first.kill9();

  const second = await scope.start({ ...store, args, sessionDb: first.sessionDb });
  const listed = (await (await fetch(`${second.baseUrl}/sessions`)).json()) as {
    sessions: Array<Record<string, unknown>>;
  };
  expect(listed.sessions.find((row) => row.sessionID === "crash-1")).toMatchObject({ user: "local", title: "first" });
  // The restarted daemon drains the committed inbox row by itself (script turn 0 again after restart: "slow reply").
  await waitFor(async () => ((await turns(second, "crash-1")) >= 1 ? true : undefined), 15_000, "drained turn");
  const replay = collect(`${second.baseUrl}/sessions/crash-1/events?since=0`);
  const last = await replay.waitFor((frame) => frame.event === "agent" && (frame.data as { seq: number }).seq === 3);
  replay.close();
  const rows = replay.frames
    .filter((frame) => frame.event === "agent")
    .map(
      (frame) =>
        frame.data.event as {
          Author: string;
          Content: { parts: Array<{ text?: string }> };
          CustomMetadata: { prompt_ids?: string[] } | null;
        },
    );
  expect(rows.map((row) => [row.Author, row.Content.parts[0]?.text])).toEqual([
    ["user", "first"],
    ["user", "second"],
    ["spar", "slow reply"],
  ]);
  expect(rows[1]?.CustomMetadata?.prompt_ids).toEqual([two.prompt_id]);
  expect(last.id).toBe("3");
  // Drained exactly once: nothing is left to run, and no further row appears. Proof: the next
  // message's turn is the second one, its rows follow seq 3 directly, and it gets the script's
  // next answer (a stray turn in between would have taken it).
  const status = (await (await fetch(`${second.baseUrl}/sessions/crash-1/status`)).json()) as {
    turn_in_flight: boolean;
  };
  expect(status.turn_in_flight).toBe(false);
  expect(await turns(second, "crash-1")).toBe(1);
  const next = collect(`${second.baseUrl}/sessions/crash-1/events?since=3`);
  try {
    expect((await postJson(`${second.baseUrl}/sessions/crash-1/inject`, { message: "third" })).status).toBe(200);
    await next.waitFor((frame) => frame.event === "turn-complete");
    const after = next.frames
      .filter((frame) => frame.event === "agent")
      .map((frame) => {
        const row = frame.data.event as { Author: string; Content: { parts: Array<{ text?: string }> } };
        return [(frame.data as { seq: number }).seq, row.Author, row.Content.parts[0]?.text];
      });
    expect(after).toEqual([
      [4, "user", "third"],
      [5, "spar", "quick reply"],
    ]);
    expect(await turns(second, "crash-1")).toBe(2);
  } finally {
    next.close();
  }
}
