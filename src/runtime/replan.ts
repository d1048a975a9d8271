/**
 * `POST /slash/replan` (D358): archive the session's active plan file (PlanFiles) so the next plan
 * starts fresh, and record it in one durable audit row (author `attach/replan`, name
 * `plan-archived`: the archived path, the reason, the verified caller). No active plan: nothing is
 * moved or written, and the answer says so. Works while a turn runs (it touches only the file).
 */
import { SparError } from "../core/errors.ts";
import type { SessionKey } from "../core/session-key.ts";
import type { PlanFiles } from "../plans/plan-files.ts";
import type { ReplanResult } from "./actor-types.ts";
import type { Journal } from "./session-journal.ts";

export const REPLAN_AUTHOR = "attach/replan";
export const REPLAN_EVENT = "plan-archived";

export interface ReplanDeps {
  key: SessionKey;
  plans: PlanFiles | undefined;
  journal: Journal;
}

export async function archivePlan(
  deps: ReplanDeps,
  reason: string | undefined,
  caller: string | undefined,
): Promise<ReplanResult> {
  const plans = deps.plans;
  if (!plans) throw new SparError("not_implemented", "this daemon has no plans directory (agent.plans_dir)");
  let moved: { from: string; to: string } | undefined;
  try {
    moved = plans.archiveActive(deps.key.id);
  } catch (error) {
    throw new SparError("persistence_failed", `the active plan could not be archived: ${String(error)}`);
  }
  if (!moved)
    return { planWasActive: false, message: `no active plan in ${plans.dirOf(deps.key.id)}: nothing was archived` };
  const metadata: Record<string, unknown> = { source: "operator", path: moved.to, from: moved.from };
  if (reason !== undefined) metadata.reason = reason;
  if (caller !== undefined) metadata.caller = caller;
  await deps.journal.append([
    { ...deps.journal.header("attach-replan", REPLAN_AUTHOR), kind: "audit", name: REPLAN_EVENT, metadata },
  ]);
  return {
    archivedPath: moved.to,
    planWasActive: true,
    message: "the active plan was archived; the next plan starts fresh",
  };
}
