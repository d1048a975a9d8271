/**
 * svc's drain window after SIGTERM (spec: Limits): the workload's budget.max_wallclock_seconds,
 * 30 s without one.
 */
import { expect, test } from "bun:test";
import { DRAIN_WINDOW_MS, drainWindowMs } from "../../../../src/svc/daemon/svc-daemon.ts";
import { loadWorkload } from "../../../../src/svc/workload/load-workload.ts";

test("the trivial workload drains for 30 s; a bundle with a wallclock budget for that budget", () => {
  const trivial = loadWorkload({ value: "", cwd: process.cwd(), env: {}, wireToolServers: false });
  if (!trivial.ok) throw new Error(trivial.error);
  expect(drainWindowMs(trivial.value.workload)).toBe(DRAIN_WINDOW_MS);
  expect(DRAIN_WINDOW_MS).toBe(30_000);
  const budgeted = { ...trivial.value.workload, budget: { ...trivial.value.workload.budget, maxWallclockSeconds: 7 } };
  expect(drainWindowMs(budgeted)).toBe(7_000);
});
