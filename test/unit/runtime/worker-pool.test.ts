import { expect, test } from "bun:test";
import { WorkerPool } from "../../../src/runtime/worker-pool.ts";

const handlers = { onTextDelta: () => {}, onRequest: async () => ({}) };
const echoTurn = (turnId: string) => ({ turnId, model: { provider: "echo" as const, name: "echo" }, history: [{ role: "user" as const, text: "ping" }], maxSteps: 3 });

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
