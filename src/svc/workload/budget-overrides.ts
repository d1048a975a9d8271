/**
 * The budget overrides of name mode (docs/svc-workloads.md#budget-overrides):
 * `SVC_BUDGET_MAX_COST_USD` (a non-negative number) and `SVC_BUDGET_MAX_WALLCLOCK_SECONDS` (a
 * non-negative integer) replace the bundle's values. A value that does not parse is fatal; an empty
 * one is unset. Directory mode does not apply them: a directory is a self-contained workload. Pure.
 */
import { type Result, err, ok } from "../../core/result.ts";
import type { Environment } from "./config-root.ts";
import type { WorkloadBudget } from "./workload.ts";

export function applyBudgetOverrides(budget: WorkloadBudget, env: Environment): Result<WorkloadBudget> {
  const result = { ...budget };
  const cost = env.SVC_BUDGET_MAX_COST_USD?.trim();
  if (cost !== undefined && cost !== "") {
    const value = Number(cost);
    if (!/^\+?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(cost) || !Number.isFinite(value))
      return err(`SVC_BUDGET_MAX_COST_USD: expected a non-negative number, got ${JSON.stringify(cost)}`);
    result.maxCostUsd = value;
  }
  const wallclock = env.SVC_BUDGET_MAX_WALLCLOCK_SECONDS?.trim();
  if (wallclock !== undefined && wallclock !== "") {
    if (!/^\+?\d+$/.test(wallclock) || !Number.isSafeInteger(Number(wallclock)))
      return err(`SVC_BUDGET_MAX_WALLCLOCK_SECONDS: expected a non-negative integer, got ${JSON.stringify(wallclock)}`);
    result.maxWallclockSeconds = Number(wallclock);
  }
  return ok(result);
}
