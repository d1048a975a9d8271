/**
 * SvcExecutors: the executor factory svc gives the runtime core. Each session's executor is the
 * coordinator's or a specialist's by the app the session lives under (SvcExecutor; a dispatch
 * shape's coordinator session runs the shape, DispatchExecutor), held (every turn refused) while a
 * gate pause holds its incident, and says what the session waits on from an operator (/status).
 * The session is tracked while loaded; when its actor leaves memory, what svc keeps for it goes.
 */
import type { Executor, ExecutorFactory, ExecutorPark, ExecutorSession } from "../../runtime/executor.ts";
import { TurnExecutor } from "../../runtime/turn-executor.ts";
import type { SessionPauses } from "../pause/session-pauses.ts";
import type { AgentProfile, AgentRoster } from "./agent-roster.ts";
import type { CoordinatorApprovals } from "./coordinator-approvals.ts";
import { DispatchExecutor } from "./dispatch-executor.ts";
import type { DispatchAgents, ShapeRunner } from "./dispatch-step.ts";
import { heldBy } from "./incident-pauses.ts";
import type { LoadedSessions } from "./loaded-sessions.ts";
import { AWAITING_APPROVAL, type SessionQuestions } from "./session-questions.ts";
import type { SpecialistGates } from "./specialist-gates.ts";
import { type SvcAgents, SvcExecutor } from "./svc-executor.ts";

export interface SvcExecutorDeps {
  roster: AgentRoster;
  /** The workload's dispatch shape's runner; undefined under coordinator dispatch. */
  runner: ShapeRunner | undefined;
  /** What the executors ask of svc: specialist runs, gates, result questions. */
  agents: SvcAgents & DispatchAgents;
  loaded: LoadedSessions;
  gates: SpecialistGates;
  approvals: CoordinatorApprovals;
  pauses: SessionPauses;
  questions: SessionQuestions;
}

export class SvcExecutors {
  readonly #deps: SvcExecutorDeps;

  constructor(deps: SvcExecutorDeps) {
    this.#deps = deps;
  }

  /**
   * Each session's executor: the coordinator's or a specialist's by its app, held (every turn
   * refused) while a gate pause holds its incident.
   */
  readonly executorFor: ExecutorFactory = (session: ExecutorSession): Executor => {
    const { roster, runner, agents, pauses } = this.#deps;
    this.#deps.loaded.track(session);
    const profile = roster.forApp(session.key.app);
    if (profile === undefined) return new TurnExecutor(session);
    const built: Executor =
      profile.role === "coordinator" && runner !== undefined
        ? new DispatchExecutor(session, agents, runner)
        : new SvcExecutor(session, agents, profile);
    return heldBy(
      built,
      () => pauses.refusal(session.key.id),
      () => this.#forget(session),
      () => this.#parkedOn(session, profile.role),
    );
  };

  /**
   * What a session waits on from an operator, for the attach surface's /status (D342): its
   * incident's gate pause, else the questions it waits on (a coordinator: every question of the
   * incident; a specialist: its own gate's), `awaiting_approval` since the oldest was asked.
   */
  async #parkedOn(session: ExecutorSession, role: AgentProfile["role"]): Promise<ExecutorPark | undefined> {
    const pause = this.#deps.pauses.active(session.key.id);
    if (pause !== undefined) return { reason: pause.reason, since: pause.mintedAt };
    const since =
      role === "coordinator"
        ? await this.#deps.questions.waitingSince(session.key.id)
        : await this.#deps.gates.waitingSince(session.key);
    return since === undefined ? undefined : { reason: AWAITING_APPROVAL, since };
  }

  /**
   * A session's actor left memory: drop what svc keeps for it (a newer load of the same key, if
   * one began meanwhile, keeps its own). Without this every session ever touched stayed (D319).
   */
  #forget(session: ExecutorSession): void {
    this.#deps.loaded.forget(session);
    this.#deps.gates.forget(session);
    this.#deps.approvals.forget(session);
  }
}
