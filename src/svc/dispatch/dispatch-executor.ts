/**
 * DispatchExecutor: a dispatch shape (graph, fanout, bounded; docs/svc.md#dispatch-shapes) as the
 * Executor of the workload's coordinator session (D207). An inject's execution opens as a turn (its
 * prompt row carries the incident text), runs the shape in place of a model call, and ends as a
 * turn does; the specialists run as sessions of their own through SpecialistRuns. A bare wake (a
 * resume's, a restart's recovery) carries on the shape's last specialist once the write-gate
 * questions it parked on are answered, then records the shape's result; or hands an approved change
 * on (graph's change executor).
 */
import type { TurnOutcome } from "../../runtime/channel.ts";
import type { CancelCause, Execution, ExecutionEnd, Executor, ExecutorSession } from "../../runtime/executor.ts";
import { TurnExecutor } from "../../runtime/turn-executor.ts";
import { delegationDoneRow, delegationRow, openDelegations } from "./delegation-ledger.ts";
import { type DispatchAgents, DispatchStep, type ShapeRunner } from "./dispatch-step.ts";

export class DispatchExecutor implements Executor {
  readonly #session: ExecutorSession;
  readonly #agents: DispatchAgents;
  readonly #runner: ShapeRunner;
  readonly #turns: TurnExecutor;

  constructor(session: ExecutorSession, agents: DispatchAgents, runner: ShapeRunner) {
    this.#session = session;
    this.#agents = agents;
    this.#runner = runner;
    this.#turns = new TurnExecutor(session);
    // The session's result questions are answerable once it is loaded (after a restart too).
    agents.approvalsFor(session);
  }

  execute(execution: Execution): Promise<ExecutionEnd | undefined> {
    return this.#turns.executeWork(execution, (human, signal) => {
      const step = new DispatchStep(this.#session, this.#agents, execution.invocationId, signal);
      return human.trim() === "" ? this.#carryOn(step) : this.#runner.run(human, step);
    });
  }

  cancel(invocationId: string, cause: CancelCause): void {
    this.#turns.cancel(invocationId, cause);
  }

  /** Carry on the shape's last specialist where an operator's answers let it go on. */
  async #carryOn(step: DispatchStep): Promise<TurnOutcome> {
    const session = this.#session;
    for (const open of openDelegations(await this.#agents.events(session))) {
      if (step.signal.aborted) return { status: "canceled" };
      const profile = this.#agents.roster.specialist(open.specialist);
      if (profile === undefined) continue;
      const run = await this.#agents.carryOnSpecialist(session.key.id, profile);
      if (run === undefined) continue;
      if (run.kind === "parked") {
        await session.journal.append([
          delegationRow(session, step.invocationId, open.callId, profile.name, run.interruptIds, open.context),
        ]);
        continue;
      }
      const done = delegationDoneRow(session, step.invocationId, open.callId, profile.name);
      return step.finish(profile.name, run.result, open.context, this.#runner.question, [done]);
    }
    const handedOver = await this.#runner.handover?.(await this.#agents.events(session), step);
    return handedOver ?? { status: "completed" };
  }
}
