/**
 * SvcRuntime: svc's layer on the runtime core (D231), composed of one part per responsibility and
 * nothing else: the core's parts once bound (SvcCore: turns, incident controls, session reads),
 * the loaded sessions (LoadedSessions), the specialists' write gates (SpecialistGates), the
 * coordinators' result questions (CoordinatorApprovals), the questions an incident waits on
 * (SessionQuestions), its gate pauses (SessionPauses), specialist runs and delegation
 * (SpecialistRuns), the executor factory (SvcExecutors), crash recovery (CrashRecovery), the
 * operator's actions (OperatorActions) and the reads (SessionQueries). Its callers take the part
 * they need (D346).
 */
import type { RemoteAgentDirectory } from "../../a2a-client/remote-agent-directory.ts";
import type { ExecutorFactory } from "../../runtime/executor.ts";
import type { AuditRecord } from "../gate/audit-log.ts";
import type { SessionPauses } from "../pause/session-pauses.ts";
import type { DispatchShape, OnMutation, Workload } from "../workload/workload.ts";
import { AgentRoster, type McpTools } from "./agent-roster.ts";
import { CallsFirst } from "./calls-first.ts";
import { CoordinatorApprovals } from "./coordinator-approvals.ts";
import { CrashRecovery } from "./crash-recovery.ts";
import type { DispatchAgents, ShapeRunner } from "./dispatch-step.ts";
import { SvcExecutors } from "./executor-factory.ts";
import { ACK_ON_RESUME, incidentPauses } from "./incident-pauses.ts";
import type { IncidentSessions } from "./incident-sessions.ts";
import { LoadedSessions } from "./loaded-sessions.ts";
import { OperatorActions } from "./operator-actions.ts";
import { SessionQueries } from "./session-queries.ts";
import { SessionQuestions } from "./session-questions.ts";
import type { SessionTurns } from "./session-turns.ts";
import { shapeRunner } from "./shape-runners.ts";
import { SpecialistGates } from "./specialist-gates.ts";
import { SpecialistRuns } from "./specialist-runs.ts";
import { SvcCore, type SvcCoreParts } from "./svc-core.ts";
import type { SvcAgents } from "./svc-executor.ts";
import { ToolSchemas } from "./tool-schemas.ts";

export interface SvcRuntimeDeps {
  roster: AgentRoster;
  onMutation: OnMutation;
  /** `hitl.change_set_ttl`: how long a change-set grant lasts. */
  changeSetTtlMs: number;
  /** The workload's dispatch shape; `runner` runs it unless it is coordinator. */
  shape?: DispatchShape;
  runner?: ShapeRunner | undefined;
  /** `hitl.require_approval`: a graph's or fan-out's result parks as a question. */
  requireApproval?: boolean;
  audit(record: AuditRecord): void;
  logError(message: string): void;
}

export class SvcRuntime {
  readonly roster: AgentRoster;
  readonly shape: DispatchShape;
  readonly requireApproval: boolean;
  /** Every loaded session of the workload, as its executor was built on it. */
  readonly loaded: LoadedSessions;
  /** The write gate of each loaded specialist session. */
  readonly gates: SpecialistGates;
  /** The incident's gate pauses and their resume tokens. */
  readonly pauses: SessionPauses;
  /** The runtime core's executor factory (svc's executors). */
  readonly executorFor: ExecutorFactory;
  /** At startup: carry out the answers a crash left undone. */
  readonly recovery: CrashRecovery;
  /** POST /resume, /abort, /ack-effects, and an inject's refusal while a session waits. */
  readonly operator: OperatorActions;
  /** The reads of an incident: its state, questions, result, sessions and events. */
  readonly queries: SessionQueries;
  readonly #core: SvcCore;
  readonly #servers: { mcp?: McpTools | undefined };

  /** `servers` is where the roster reads the tool servers from once bound. */
  constructor(deps: SvcRuntimeDeps, servers: { mcp?: McpTools | undefined } = {}, schemas = new ToolSchemas()) {
    const roster = deps.roster;
    const coordinatorApp = roster.coordinator.app;
    const runner = deps.runner;
    const dispatch = runner !== undefined;
    const logError = (message: string) => deps.logError(message);
    const held = (sessionId: string) => this.pauses.refusal(sessionId);
    this.roster = roster;
    this.shape = deps.shape ?? "coordinator";
    this.requireApproval = deps.requireApproval ?? false;
    this.#servers = servers;
    const core = new SvcCore({
      coordinatorApp,
      specialistApps: () => roster.specialists().map((profile) => profile.app),
      journalOf: (key) => this.loaded.journalOf(key),
      held,
    });
    this.#core = core;
    const loaded = new LoadedSessions((key) => core.load(key));
    const gates = new SpecialistGates({
      roster,
      schemas,
      core,
      onMutation: deps.onMutation,
      changeSetTtlMs: deps.changeSetTtlMs,
      audit: (record) => deps.audit(record),
    });
    const approvals = new CoordinatorApprovals(core, coordinatorApp, dispatch);
    const handsOver = (result: Record<string, unknown>) => runner?.handsOver?.(result) ?? false;
    const questions = sessionQuestions(coordinatorApp, core, gates, approvals, handsOver);
    const pauses = incidentPauses({
      coordinatorApp,
      incident: () => core.incident,
      ackEffects: async (sessionId, caller) =>
        (await questions.ackEffects({ sessionId, reason: ACK_ON_RESUME, caller })).acknowledged,
      logError,
    });
    const runs = new SpecialistRuns(roster, core, gates);
    const agents = this.#agents(runs, { core, gates, approvals }, logError);
    const executors = new SvcExecutors({ roster, runner, agents, loaded, gates, approvals, pauses, questions });
    this.loaded = loaded;
    this.gates = gates;
    this.pauses = pauses;
    this.executorFor = executors.executorFor;
    this.recovery = new CrashRecovery({ roster, core, gates, held, handsOver, logError });
    this.operator = new OperatorActions(core, pauses, questions, dispatch);
    this.queries = new SessionQueries({ core, coordinatorApp, dispatch, loaded, approvals, questions });
  }

  static forWorkload(
    options: Omit<SvcRuntimeDeps, "roster" | "shape" | "runner" | "requireApproval"> & {
      workload: Workload;
      app: string;
      /** Remote A2A agents the coordinator may call (`call_a2a`). */
      remoteAgents?: RemoteAgentDirectory | undefined;
    },
  ): SvcRuntime {
    const { workload, app, remoteAgents, ...rest } = options;
    const servers: { mcp?: McpTools | undefined } = {};
    const roster = new AgentRoster(workload, app, () => servers.mcp, remoteAgents);
    const schemas = new ToolSchemas();
    const shape = {
      shape: workload.dispatch,
      runner: shapeRunner(workload, roster, schemas),
      requireApproval: workload.hitl.requireApproval,
    };
    return new SvcRuntime({ ...rest, ...shape, roster }, servers, schemas);
  }

  /** The core's parts, once it has started (the executor factory exists before it). */
  bind(parts: SvcCoreParts): void {
    this.#core.bind(parts);
    this.#servers.mcp = parts.mcp;
  }

  /** Turns on the workload's sessions, one after another per session (inject, A2A, AG-UI, auto-resume). */
  get turns(): SessionTurns {
    return this.#core.turns;
  }

  /** Every session of one incident at once: abort, interrupt, wake. */
  get incident(): IncidentSessions {
    return this.#core.incident;
  }

  /** What the executors ask of svc (SvcAgents, DispatchAgents), each answered by the part that owns it. */
  #agents(
    runs: SpecialistRuns,
    parts: { core: SvcCore; gates: SpecialistGates; approvals: CoordinatorApprovals },
    logError: (message: string) => void,
  ): SvcAgents & DispatchAgents {
    const { core, gates, approvals } = parts;
    return {
      roster: this.roster,
      shape: this.shape,
      requireApproval: this.requireApproval,
      gateFor: (session, profile) => gates.gateFor(session, profile),
      approvalsFor: (session) => approvals.approvalsFor(session),
      events: (session) => core.events(session.key),
      runSpecialist: (sessionId, profile, request) => runs.runSpecialist(sessionId, profile, request),
      carryOnSpecialist: (sessionId, profile) => runs.carryOnSpecialist(sessionId, profile),
      delegate: (session, call, turnId) => runs.delegate(session, call, turnId),
      callRemote: (call, signal) => runs.callRemote(call, signal),
      continueDelegations: (session, invocationId, signal) => runs.continueDelegations(session, invocationId, signal),
      logError,
    };
  }
}

/** The questions an incident waits on, read from its gates and result questions; an answer runs the coordinator on. */
function sessionQuestions(
  coordinatorApp: string,
  core: SvcCore,
  gates: SpecialistGates,
  approvals: CoordinatorApprovals,
  handsOver: (result: Record<string, unknown>) => boolean,
): SessionQuestions {
  return new SessionQuestions({
    coordinatorApp,
    gatesOf: (sessionId) => gates.gatesOf(sessionId),
    approvalsOf: (sessionId) => approvals.approvalsOf(sessionId),
    authorize: async (target, caller) => {
      await core.sessions.authorize(target, caller, "write");
    },
    runOn: (target, caller) => core.turns.run(target, caller, ""),
    callsFirst: new CallsFirst({ lingerMs: 100, maxWaitMs: 2000 }),
    handsOver,
  });
}
