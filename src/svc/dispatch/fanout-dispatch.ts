/**
 * Fan-out dispatch (docs/svc.md#dispatch-shapes): every Task specialist but `_synthesis` is an
 * analyst branch; the analysts run on the incident text concurrently, each as its own session, at
 * most `fanout.max_concurrency` at a time (4 by default; negative: unbounded). The analysts are
 * read-only (the loader refuses any other roster). `_synthesis` then runs on the incident and the
 * reports of the analysts that reported (R of T); its result ends the run, asked about as
 * `approve-_synthesis` (docs/svc.md#questions) when the workload requires approval. No analyst
 * reporting fails the run without asking `_synthesis`.
 */
import type { TurnOutcome } from "../../runtime/channel.ts";
import { SYNTHESIS, fanoutAnalysts } from "../workload/dispatch-shape.ts";
import type { Workload } from "../workload/workload.ts";
import type { AgentProfile, AgentRoster } from "./agent-roster.ts";
import { DISPATCH_BRANCH_ROW, type DispatchStep, shownResult, type ShapeRunner } from "./dispatch-step.ts";

/** How one analyst's branch ended. */
export type BranchOutcome =
  | { analyst: string; reported: true; result: Record<string, unknown> }
  | { analyst: string; reported: false; error: string };

export class FanoutDispatch implements ShapeRunner {
  readonly #analysts: readonly AgentProfile[];
  readonly #synthesis: AgentProfile;
  readonly #limit: number;

  constructor(analysts: readonly AgentProfile[], synthesis: AgentProfile, maxConcurrency: number | "unbounded") {
    this.#analysts = analysts;
    this.#synthesis = synthesis;
    this.#limit = maxConcurrency === "unbounded" ? Math.max(1, analysts.length) : Math.max(1, maxConcurrency);
  }

  static forWorkload(workload: Workload, roster: AgentRoster): FanoutDispatch {
    const synthesis = roster.specialist(SYNTHESIS);
    if (synthesis === undefined) throw new Error(`workload ${workload.name}: fanout dispatch without ${SYNTHESIS}`);
    const analysts = fanoutAnalysts(workload.specialists)
      .map((specialist) => roster.specialist(specialist.name))
      .filter((profile) => profile !== undefined);
    return new FanoutDispatch(analysts, synthesis, workload.fanoutMaxConcurrency);
  }

  readonly question = (_specialist: string, result: Record<string, unknown>, context: Record<string, unknown>) =>
    `Approve merged report from ${String(context.reported)} of ${String(context.analysts)} analysts? Result: ${shownResult(result)}`;

  async run(incident: string, step: DispatchStep): Promise<TurnOutcome> {
    const branches = await inBatches(this.#analysts, this.#limit, (analyst) => branch(step, analyst, incident));
    await step.session.journal.append(
      branches.map((outcome) => step.row(DISPATCH_BRANCH_ROW, { ...outcome, specialist: outcome.analyst })),
    );
    if (step.signal.aborted) return { status: "canceled" };
    const reported = branches.filter((outcome) => outcome.reported);
    if (reported.length === 0)
      return {
        status: "failed",
        message: `no analyst reported, so ${SYNTHESIS} did not run: ${branches.map((outcome) => (outcome.reported ? "" : `${outcome.analyst}: ${outcome.error}`)).join("; ")}`,
      };
    const context = { reported: reported.length, analysts: branches.length };
    return step.last(this.#synthesis, synthesisRequest(incident, branches), context, this.question);
  }
}

async function branch(step: DispatchStep, analyst: AgentProfile, incident: string): Promise<BranchOutcome> {
  if (step.signal.aborted) return { analyst: analyst.name, reported: false, error: "the run was cancelled" };
  try {
    const run = await step.specialist(analyst, incident);
    if (run.kind === "done") return { analyst: analyst.name, reported: true, result: run.result };
    return { analyst: analyst.name, reported: false, error: `parked on ${run.interruptIds.join(", ")}` };
  } catch (error) {
    return { analyst: analyst.name, reported: false, error: error instanceof Error ? error.message : String(error) };
  }
}

/** Run `work` on every item, at most `limit` at once; the outcomes in the items' order. */
export async function inBatches<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const outcomes: R[] = new Array(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      outcomes[index] = await work(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return outcomes;
}

/** What `_synthesis` is asked: the incident, then each analyst's report (or why it has none). */
export function synthesisRequest(incident: string, branches: readonly BranchOutcome[]): string {
  const reported = branches.filter((outcome) => outcome.reported).length;
  return [
    incident,
    "",
    `ANALYST REPORTS (${reported} of ${branches.length} analysts reported):`,
    ...branches.map((outcome) =>
      outcome.reported
        ? `- ${outcome.analyst}: ${JSON.stringify(outcome.result)}`
        : `- ${outcome.analyst}: no report (${outcome.error})`,
    ),
    "",
    "Merge the reports into one.",
  ].join("\n");
}
