import { expect, test } from "bun:test";
import type { MessagePart } from "../../../src/core/events.ts";
import { TURN_CHANNEL, type WorkerRequest } from "../../../src/runtime/channel.ts";
import { WorkerPool } from "../../../src/runtime/worker-pool.ts";
import { standIn } from "./fixtures/stand-in-worker.ts";

const handlers = { onPart: () => {}, onRequest: async () => ({}) };
const echoTurn = (turnId: string) => ({
  turnId,
  model: { provider: "echo" as const, name: "echo" },
  conversationKey: `c-${turnId}`,
  conversation: [{ role: "user" as const, text: "ping" }],
  maxSteps: 3,
});

test("a real turn worker streams the response's parts, then asks the main thread to commit it under the same id", async () => {
  const requests: WorkerRequest[] = [];
  const parts: [string, MessagePart][] = [];
  const pool = new WorkerPool(1);
  const outcome = await pool.runTurn(echoTurn("t1"), {
    onPart: (messageId, part) => parts.push([messageId, part]),
    onRequest: async (request) => (requests.push(request), { ok: true }),
  }).outcome;
  await pool.close();
  expect(outcome).toEqual({ status: "completed" });
  expect(requests).toEqual([
    { kind: "commit-response", draft: expect.objectContaining({ text: "ping", toolCalls: [], turnComplete: true }) },
  ]);
  const draft = requests[0]?.kind === "commit-response" ? requests[0].draft : undefined;
  expect(draft?.messageId).toMatch(/^[0-9a-f-]{36}$/);
  expect(parts).toEqual([
    [draft?.messageId ?? "", { kind: "text-start" }],
    [draft?.messageId ?? "", { kind: "text-delta", text: "ping" }],
    [draft?.messageId ?? "", { kind: "text-end" }],
  ]);
});

test("a worker that cannot start is respawned with a growing delay, never in a tight loop", async () => {
  let spawned = 0;
  const pool = new WorkerPool(1, {
    factory: () => {
      spawned++;
      return new Worker(new URL("./no-such-worker-file.ts", import.meta.url));
    },
  });
  const first = await pool.runTurn(echoTurn("t1"), handlers).outcome;
  expect(first.status).toBe("failed");
  // Time under test: the respawn backoff over 1.5 s.
  await Bun.sleep(1500);
  // 200 + 400 + 800 ms of backoff fit at most ~4 spawns in 1.5 s; a tight loop would make thousands.
  expect(spawned).toBeLessThanOrEqual(5);
  expect(pool.healthy).toBe(false);
  const later = await pool.runTurn(echoTurn("t2"), handlers).outcome;
  expect(later.status).toBe("failed");
  await pool.close();
});

test("a session's next turn on the same worker carries only the new messages; the worker rebuilds the whole conversation", async () => {
  const sent: Array<{ historyBase: number; history: unknown[] }> = [];
  const pool = new WorkerPool(2, {
    factory: () => {
      const worker = new Worker(new URL("../../../workers/turn.ts", import.meta.url));
      const post = worker.postMessage.bind(worker);
      worker.postMessage = (data: unknown) => {
        // A job's messages after its first are posted together, as one array (worker-port-transport.ts).
        for (const message of [data].flat() as Array<{ type: string; historyBase: number; history: unknown[] }>)
          if (message.type === "run-turn") sent.push({ historyBase: message.historyBase, history: message.history });
        post(data);
      };
      return worker;
    },
  });
  const conversation: Array<{ role: "user"; text: string } | { role: "assistant"; text: string; toolCalls: [] }> = [
    { role: "user", text: "aaaa" },
  ];
  const drafts: Array<{ usage: { inputTokens: number } }> = [];
  const handlers = {
    onPart: () => {},
    onRequest: async (request: { kind: string; draft?: { usage: { inputTokens: number } } }) => (
      request.draft && drafts.push(request.draft), {}
    ),
  };
  for (let turn = 1; turn <= 3; turn++) {
    const outcome = await pool.runTurn(
      {
        turnId: `t${turn}`,
        model: { provider: "echo", name: "echo" },
        conversationKey: "session-a",
        conversation,
        maxSteps: 3,
      },
      handlers as never,
    ).outcome;
    expect(outcome).toEqual({ status: "completed" });
    conversation.push({ role: "assistant", text: conversation[conversation.length - 1]?.text ?? "", toolCalls: [] });
    conversation.push({ role: "user", text: "bbbb" });
  }
  await pool.close();
  expect(sent.map((message) => [message.historyBase, message.history.length])).toEqual([
    [0, 1],
    [1, 2],
    [3, 2],
  ]);
  // Echo counts every message of the request: 4, 12 and 20 characters -> 1, 3 and 5 tokens.
  expect(drafts.map((draft) => draft.usage.inputTokens)).toEqual([1, 3, 5]);
});

/** A pool of real turn workers that records every message the main thread posts to them. */
function recordingPool(options: { conversationBudget?: { conversations: number; messages: number } } = {}) {
  const sent: Array<{ type: string; historyBase?: number; history?: unknown[]; forget?: string[]; keys?: string[] }> =
    [];
  const pool = new WorkerPool(1, {
    ...options,
    factory: () => {
      const worker = new Worker(new URL("../../../workers/turn.ts", import.meta.url));
      const post = worker.postMessage.bind(worker);
      worker.postMessage = (data: unknown) => {
        sent.push(...([data].flat() as typeof sent));
        post(data);
      };
      return worker;
    },
  });
  const inputTokens: number[] = [];
  const handlers = {
    onPart: () => {},
    onRequest: async (request: { draft?: { usage: { inputTokens: number } } }) => (
      request.draft && inputTokens.push(request.draft.usage.inputTokens), {}
    ),
  };
  const turn = (turnId: string, conversationKey: string, conversation: Array<{ role: "user"; text: string }>) =>
    pool.runTurn(
      { turnId, model: { provider: "echo", name: "echo" }, conversationKey, conversation, maxSteps: 3 },
      handlers as never,
    ).outcome;
  return {
    pool,
    sent,
    inputTokens,
    turn,
    runs: () => sent.filter((m) => m.type === "run-turn").map((m) => [m.historyBase, m.history?.length, m.forget]),
  };
}

const four = (c: string) => [{ role: "user" as const, text: c.repeat(4) }];

test("forget drops a session's conversation from the worker at once; its next turn sends it whole and the worker holds no stale prefix", async () => {
  const { pool, sent, inputTokens, turn, runs } = recordingPool();
  const conversation = four("a");
  expect(await turn("t1", "gone", conversation)).toEqual({ status: "completed" });
  conversation.push({ role: "user", text: "bbbb" });
  pool.forget("gone");
  pool.forget("never-seen");
  expect(sent.filter((m) => m.type === "forget")).toEqual([{ type: "forget", keys: ["gone"] }]);
  // Had the worker kept its 1-message copy, a whole resend (base 0) would be refused as a prefix mismatch.
  expect(await turn("t2", "gone", conversation)).toEqual({ status: "completed" });
  await pool.close();
  expect(runs()).toEqual([
    [0, 1, []],
    [0, 2, []],
  ]);
  expect(inputTokens).toEqual([1, 2]);
});

test("a worker keeps at most its message budget: the least recently used conversations are forgotten first", async () => {
  const { pool, inputTokens, turn, runs } = recordingPool({ conversationBudget: { conversations: 10, messages: 4 } });
  const a = [...four("a"), ...four("a"), ...four("a")];
  const b = [...four("b"), ...four("b")];
  expect(await turn("t1", "a", a)).toEqual({ status: "completed" });
  // 3 + 2 messages > 4: "a" is forgotten when "b" arrives.
  expect(await turn("t2", "b", b)).toEqual({ status: "completed" });
  // "a" comes back whole; now "b" goes.
  expect(await turn("t3", "a", a)).toEqual({ status: "completed" });
  // One conversation over the budget on its own is still kept while it runs.
  const big = [...a, ...a];
  expect(await turn("t4", "big", big)).toEqual({ status: "completed" });
  await pool.close();
  expect(runs()).toEqual([
    [0, 3, []],
    [0, 2, ["a"]],
    [0, 3, ["b"]],
    [0, 6, ["a"]],
  ]);
  expect(inputTokens).toEqual([3, 2, 3, 6]);
});

test("a turn worker of another channel version is refused by name, and never counts as started", async () => {
  const failures: string[] = [];
  const pool = new WorkerPool(1, {
    factory: () => standIn("next-version", "turn"),
    onFailure: (reason) => failures.push(reason),
  });
  const outcome = await pool.runTurn(echoTurn("t1"), handlers).outcome;
  await pool.close();
  const versions = `turn worker speaks channel v${TURN_CHANNEL.version + 1}, the daemon v${TURN_CHANNEL.version}`;
  expect(outcome).toEqual({ status: "failed", message: versions });
  expect(failures).toEqual([`${versions}; the worker never started, retrying in 200 ms`]);
});

test("a turn worker that exits mid-turn fails the turn at once and is replaced", async () => {
  const failures: string[] = [];
  let spawned = 0;
  const pool = new WorkerPool(1, {
    factory: () =>
      ++spawned === 1 ? standIn("exit", "turn") : new Worker(new URL("../../../workers/turn.ts", import.meta.url)),
    onFailure: (reason) => failures.push(reason),
  });
  expect(await pool.runTurn(echoTurn("t1"), handlers).outcome).toEqual({
    status: "failed",
    message: "turn worker exited",
  });
  expect(failures).toEqual(["turn worker exited; replacing the worker"]);
  expect(await pool.runTurn(echoTurn("t2"), handlers).outcome).toEqual({ status: "completed" });
  expect(spawned).toBe(2);
  await pool.close();
});

test("a turn worker that crashes mid-turn fails the turn with its error and is replaced", async () => {
  const failures: string[] = [];
  const pool = new WorkerPool(1, {
    factory: () => standIn("crash", "turn"),
    onFailure: (reason) => failures.push(reason),
  });
  const outcome = await pool.runTurn(echoTurn("t1"), handlers).outcome;
  await pool.close();
  expect(outcome.status).toBe("failed");
  expect(outcome.status === "failed" && outcome.message).toStartWith("turn worker crashed: ");
  expect(outcome.status === "failed" && outcome.message).toContain("the stand-in fell over");
  expect(failures).toHaveLength(1);
  expect(failures[0]).toEndWith("; replacing the worker");
});
