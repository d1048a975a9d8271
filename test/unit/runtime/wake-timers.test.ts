/**
 * WakeTimers (D360): one timer per session's pending wake; a later schedule replaces the earlier
 * one, a due wake fires on the next tick, a cleared or closed one never fires.
 */
import { expect, test } from "bun:test";
import type { SessionKey } from "../../../src/core/session-key.ts";
import type { ScheduledWake } from "../../../src/core/wake-loop.ts";
import { WakeTimers } from "../../../src/runtime/wake-timers.ts";

const A = { app: "spar", id: "a" };
const B = { app: "spar", id: "b" };
const wake = (id: string, aheadMs: number): ScheduledWake => ({
  id,
  at: new Date(Date.now() + aheadMs).toISOString(),
  reason: "",
});

test("a later schedule replaces the earlier; due wakes fire once; cleared ones never", async () => {
  const fired: string[] = [];
  let told: () => void = () => {};
  const timers = new WakeTimers((key: SessionKey, due) => {
    fired.push(`${key.id}:${due.id}`);
    told();
  });
  timers.arm(A, wake("a1", 3_600_000));
  timers.arm(A, wake("a2", -1000));
  timers.arm(B, wake("b1", -1000));
  timers.clear(B);
  expect(timers.pending(A)?.id).toBe("a2");
  expect(timers.pending(B)).toBeUndefined();
  await new Promise<void>((resolve) => {
    told = resolve;
  });
  expect(fired).toEqual(["a:a2"]);
  expect(timers.pending(A)).toBeUndefined();
  timers.arm(A, wake("a3", 3_600_000));
  expect(timers.size).toBe(1);
  timers.close();
  expect(timers.size).toBe(0);
  timers.arm(A, wake("a4", -1000));
  expect(timers.pending(A)).toBeUndefined();
});
