import { expect, test } from "bun:test";
import { WorkerPool } from "../../../src/runtime/worker-pool.ts";

const handlers = { onTextDelta: () => {}, onRequest: async () => ({}) };
const echoTurn = (turnId: string) => ({ turnId, model: { provider: "echo" as const, name: "echo" }, conversationKey: `c-${turnId}`, conversation: [{ role: "user" as const, text: "ping" }], maxSteps: 3 });

test("a real turn worker runs an echo turn and asks the main thread to commit its response", async () => {
  const requests: unknown[] = [];
  const pool = new WorkerPool(1);
  const outcome = await pool.runTurn(echoTurn("t1"), { onTextDelta: () => {}, onRequest: async (request) => (requests.push(request), { ok: true }) }).outcome;
  await pool.close();
  expect(outcome).toEqual({ status: "completed" });
  expect(requests).toEqual([{ kind: "commit-response", draft: expect.objectContaining({ text: "ping", toolCalls: [], turnComplete: true }) }]);
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
      worker.postMessage = (message: { type: string; historyBase: number; history: unknown[] }) => {
        if (message.type === "run-turn") sent.push({ historyBase: message.historyBase, history: message.history });
        post(message);
      };
      return worker;
    },
  });
  const conversation: Array<{ role: "user"; text: string } | { role: "assistant"; text: string; toolCalls: [] }> = [{ role: "user", text: "aaaa" }];
  const drafts: Array<{ usage: { inputTokens: number } }> = [];
  const handlers = { onTextDelta: () => {}, onRequest: async (request: { kind: string; draft?: { usage: { inputTokens: number } } }) => (request.draft && drafts.push(request.draft), {}) };
  for (let turn = 1; turn <= 3; turn++) {
    const outcome = await pool.runTurn({ turnId: `t${turn}`, model: { provider: "echo", name: "echo" }, conversationKey: "session-a", conversation, maxSteps: 3 }, handlers as never).outcome;
    expect(outcome).toEqual({ status: "completed" });
    conversation.push({ role: "assistant", text: conversation[conversation.length - 1]?.text ?? "", toolCalls: [] });
    conversation.push({ role: "user", text: "bbbb" });
  }
  await pool.close();
  expect(sent.map((message) => [message.historyBase, message.history.length])).toEqual([[0, 1], [1, 2], [3, 2]]);
  // Echo counts every message of the request: 4, 12 and 20 characters -> 1, 3 and 5 tokens.
  expect(drafts.map((draft) => draft.usage.inputTokens)).toEqual([1, 3, 5]);
});
