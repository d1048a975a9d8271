/**
 * CallsFirst: the turns after a burst of answers wait for the approved calls being carried out
 * and a lull, never longer than the bound.
 */
import { expect, test } from "bun:test";
import { CallsFirst } from "../../../../src/svc/dispatch/calls-first.ts";

test("a turn waits while an approved call runs and for the lull after it", async () => {
  const gate = new CallsFirst({ lingerMs: 20, maxWaitMs: 5_000 });
  const order: string[] = [];
  let finish: () => void = () => {};
  const call = gate.call(() => new Promise<void>((resolve) => (finish = resolve))).then(() => order.push("call"));
  const turn = gate.turnsMayRun().then(() => order.push("turn"));
  // Time under test: three lingers pass and the turn still waits for the running call.
  await Bun.sleep(60);
  expect(order).toEqual([]);
  const ended = performance.now();
  finish();
  await Promise.all([call, turn]);
  expect(order).toEqual(["call", "turn"]);
  expect(performance.now() - ended).toBeGreaterThanOrEqual(15);
});

test("a steady stream of calls cannot hold a turn back past maxWaitMs", async () => {
  const gate = new CallsFirst({ lingerMs: 20, maxWaitMs: 100 });
  const never = gate.call(() => new Promise<void>(() => {}));
  const started = performance.now();
  await gate.turnsMayRun();
  const waited = performance.now() - started;
  expect(waited).toBeGreaterThanOrEqual(95);
  expect(waited).toBeLessThan(1_000);
  void never;
});

test("with nothing running a turn goes at once", async () => {
  const gate = new CallsFirst({ lingerMs: 20, maxWaitMs: 1_000 });
  const started = performance.now();
  await gate.turnsMayRun();
  expect(performance.now() - started).toBeLessThan(10);
});
