/**
 * Graph dispatch (docs/svc.md#dispatch-shapes, LLM-as-router): the classifier (the first SingleTurn specialist
 * of the composed spec set) runs on the incident text; its reply, trimmed, is the route key: the
 * exact name of a Task specialist routes there, anything else to `_fallback`. The routed
 * specialist runs on the incident text; its result ends the run, asked about as
 * `approve-<name>` (docs/svc.md#questions) when the workload requires approval. An approved result that
 * carries a `proposed_change` is handed to the workload's change executor (the first specialist
 * declaring `capability: change_executor`, change-handover.ts), which runs on it next.
 */
import type { SessionEvent } from "../../core/events.ts";
import type { TurnOutcome } from "../../runtime/channel.ts";
import { HANDOVER_FROM, HANDOVER_ROW, handoverRequest, pendingHandover, proposedChange } from "./change-handover.ts";
import { FALLBACK, graphClassifier } from "../workload/dispatch-shape.ts";
import type { Workload } from "../workload/workload.ts";
import type { AgentProfile, AgentRoster } from "./agent-roster.ts";
import {
  DISPATCH_ROUTE_ROW,
  type DispatchStep,
  shownResult,
  unusableReply,
  type ShapeRunner,
} from "./dispatch-step.ts";

export class GraphDispatch implements ShapeRunner {
  readonly #classifier: AgentProfile;
  /** The Task specialists a route key can name. */
  readonly #routes: ReadonlyMap<string, AgentProfile>;
  /** Receives approved changes; none when no specialist declares `capability: change_executor`. */
  readonly #executor: AgentProfile | undefined;

  constructor(classifier: AgentProfile, routes: readonly AgentProfile[], executor?: AgentProfile) {
    this.#classifier = classifier;
    this.#routes = new Map(routes.map((profile) => [profile.name, profile]));
    this.#executor = executor;
  }

  static forWorkload(workload: Workload, roster: AgentRoster): GraphDispatch {
    const name = graphClassifier(workload.specialists)?.name;
    const classifier = name === undefined ? undefined : roster.specialist(name);
    if (classifier === undefined) throw new Error(`workload ${workload.name}: graph dispatch without a classifier`);
    const routes = roster.specialists().filter((profile) => profile.specialist?.mode === "Task");
    const executor = routes.find((profile) => profile.specialist?.capability === "change_executor");
    return new GraphDispatch(classifier, routes, executor);
  }

  /** Whether approving `result` hands a change to the change executor. */
  handsOver(result: Record<string, unknown>): boolean {
    return this.#executor !== undefined && proposedChange(result) !== undefined;
  }

  /** Run the change executor on the approved change not handed over yet; undefined when there is none. */
  async handover(events: readonly SessionEvent[], step: DispatchStep): Promise<TurnOutcome | undefined> {
    const executor = this.#executor;
    const due = pendingHandover(events);
    if (executor === undefined || due === undefined) return undefined;
    await step.record(HANDOVER_ROW, {
      interrupt_id: due.interruptId,
      from: due.from,
      to: executor.name,
      proposed_change: due.change,
      ...(due.approver === undefined ? {} : { approver: due.approver }),
    });
    if (step.signal.aborted) return { status: "canceled" };
    return step.last(
      executor,
      handoverRequest(due),
      { route: executor.name, [HANDOVER_FROM]: due.from },
      this.question,
    );
  }

  readonly question = (specialist: string, result: Record<string, unknown>): string =>
    `Approve triage result from ${specialist}? Result: ${shownResult(result)}`;

  async run(incident: string, step: DispatchStep): Promise<TurnOutcome> {
    const classified = await step.specialist(this.#classifier, incident);
    const reply = classified.kind === "done" ? String(classified.result.result ?? "") : "";
    const key = reply.trim();
    const routed = this.#routes.get(key) ?? this.#routes.get(FALLBACK);
    await step.record(DISPATCH_ROUTE_ROW, {
      classifier: this.#classifier.name,
      reply,
      route: routed?.name ?? null,
      matched: this.#routes.has(key),
    });
    if (routed === undefined)
      return unusableReply(
        `classifier ${this.#classifier.name} answered ${JSON.stringify(key.slice(0, 80))}: no specialist of that name and no ${FALLBACK} to route to`,
      );
    if (step.signal.aborted) return { status: "canceled" };
    return step.last(routed, incident, { route: routed.name }, this.question);
  }
}
