/**
 * SvcRuntime: svc's layer on the runtime core (D231). It builds each session's executor (the
 * coordinator's or a specialist's, by the app the session lives under; a dispatch shape's
 * coordinator session runs the shape, DispatchExecutor), holds the write gate of every loaded
 * specialist session and the result questions of every loaded coordinator session, runs a
 * specialist as its own session for the coordinator or the shape, and answers the main
 * listener's /resume through SessionQuestions: finds the question, records the answer, then runs
 * the coordinator's next turn, which carries a verdict out.
 */
import type { Principal } from "../../core/acl.ts";
import { SparError } from "../../core/errors.ts";
import type { CommittedRow, SessionEvent, ToolCall, UserMessageEvent } from "../../core/events.ts";
import type { EventLog } from "../../core/event-log.ts";
import { type SessionKey, sessionKeyString } from "../../core/session-key.ts";
import type { ToolRunner } from "../../core/tool-catalog.ts";
import type { RemoteAgentDirectory } from "../../a2a-client/remote-agent-directory.ts";
import type { Executor, ExecutorFactory, ExecutorPark, ExecutorSession } from "../../runtime/executor.ts";
import type { ToolVerdict } from "../../runtime/gated-tools.ts";
import type { SessionService, SessionTarget } from "../../runtime/session-service.ts";
import { TurnExecutor } from "../../runtime/turn-executor.ts";
import type { ResumeOutcome, ResumeRequest, SessionStatus } from "../listener/listener-port.ts";
import type { AuditRecord } from "../gate/audit-log.ts";
import { GATE_AUTHOR, type GateLedger } from "../gate/gate-ledger.ts";
import type { WriteGate } from "../gate/write-gate.ts";
import type { ChangeSet } from "../gate/change-set.ts";
import type { DispatchShape, OnMutation, Workload } from "../workload/workload.ts";
import { type AgentProfile, AgentRoster, type McpTools } from "./agent-roster.ts";
import { delegationDoneRow, delegationRow, openDelegations } from "./delegation-ledger.ts";
import { DispatchExecutor } from "./dispatch-executor.ts";
import type { DispatchAgents, ShapeRunner } from "./dispatch-step.ts";
import { ResultApprovals } from "./result-approval.ts";
import { type DispatchResult, dispatchResultOf } from "./dispatch-result.ts";
import { AWAITING_APPROVAL, SessionQuestions, oldest } from "./session-questions.ts";
import { CallsFirst } from "./calls-first.ts";
import { newWriteGate } from "./gate-factory.ts";
import { SessionTurns } from "./session-turns.ts";
import type { AckEffectsRequest } from "../listener/listener-port.ts";
import { shapeRunner } from "./shape-runners.ts";
import { pendingHandover } from "./change-handover.ts";
import { type SpecialistRun, specialistResult } from "./specialist-result.ts";
import { SvcExecutor } from "./svc-executor.ts";
import { ToolSchemas } from "./tool-schemas.ts";
import { IncidentSessions } from "./incident-sessions.ts";
import type { SessionPauses } from "../pause/session-pauses.ts";
import { ACK_ON_RESUME, heldBy, incidentPauses } from "./incident-pauses.ts";
import type { Journal } from "../../runtime/session-journal.ts";
import type { Caller } from "../../surfaces/http/caller-auth.ts";

/** The machine identity svc acts under in its specialists' sessions (never digested in exports). */
export const SVC_INTERNAL: Principal = Object.freeze({ identity: "svc:internal", admin: true });

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

/** The runtime core's parts svc uses, bound once the core has started. */
export interface SvcCoreParts {
  sessions: SessionService;
  log: EventLog;
  /** Where answered calls run (the core's tools, with `_meta`). */
  runner: ToolRunner;
  /** The tool servers' tools (undefined: none wired). */
  mcp: McpTools | undefined;
}

export class SvcRuntime implements DispatchAgents {
  readonly roster: AgentRoster;
  readonly shape: DispatchShape;
  readonly requireApproval: boolean;
  readonly #deps: SvcRuntimeDeps;
  /** Each loaded specialist session's gate, with the session it was built on. */
  readonly #gates = new Map<string, { session: ExecutorSession; gate: WriteGate }>();
  /** The result questions of each loaded coordinator session (dispatch shapes only). */
  readonly #approvals = new Map<string, { session: ExecutorSession; approvals: ResultApprovals }>();
  /** Every loaded session of the workload, as its executor was built on it (the drain and auto-resume write through it). */
  readonly #loaded = new Map<string, ExecutorSession>();
  readonly #schemas: ToolSchemas;
  readonly #questions: SessionQuestions;
  /** The journal of each loaded coordinator session (pause rows are written there). */
  readonly #journals = new Map<string, Journal>();
  /** The incident's gate pauses and their resume tokens. */
  readonly pauses: SessionPauses;
  #bound: BoundCore | undefined;

  readonly #servers: { mcp?: McpTools | undefined };

  /** `servers` is where the roster reads the tool servers from once bound. */
  constructor(deps: SvcRuntimeDeps, servers: { mcp?: McpTools | undefined } = {}, schemas = new ToolSchemas()) {
    this.#deps = deps;
    this.roster = deps.roster;
    this.shape = deps.shape ?? "coordinator";
    this.requireApproval = deps.requireApproval ?? false;
    this.#schemas = schemas;
    this.#questions = new SessionQuestions({
      coordinatorApp: this.roster.coordinator.app,
      gatesOf: (sessionId) => this.gatesOf(sessionId),
      approvalsOf: (sessionId) => this.approvalsOf(sessionId),
      authorize: async (target, caller) => {
        await this.#core().sessions.authorize(target, caller, "write");
      },
      runOn: (target, caller) => this.turns.run(target, caller, ""),
      callsFirst: new CallsFirst({ lingerMs: 100, maxWaitMs: 2000 }),
      handsOver: (result) => this.#deps.runner?.handsOver?.(result) ?? false,
    });
    this.#servers = servers;
    this.pauses = incidentPauses({
      coordinatorApp: this.roster.coordinator.app,
      incident: () => this.incident,
      ackEffects: async (sessionId, caller) =>
        (await this.#questions.ackEffects({ sessionId, reason: ACK_ON_RESUME, caller })).acknowledged,
      logError: (message) => this.#deps.logError(message),
    });
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
    const incident = new IncidentSessions({
      sessions: parts.sessions,
      coordinatorApp: this.roster.coordinator.app,
      specialistApps: this.roster.specialists().map((profile) => profile.app),
      journalOf: (key) => this.#journals.get(sessionKeyString(key)),
      internal: SVC_INTERNAL,
    });
    const turns = new SessionTurns(parts.sessions, (sessionId) => this.pauses.refusal(sessionId));
    this.#bound = { ...parts, turns, incident };
    this.#servers.mcp = parts.mcp;
  }

  get turns(): SessionTurns {
    return this.#core().turns;
  }

  /** Every session of one incident at once: abort, interrupt, wake. */
  get incident(): IncidentSessions {
    return this.#core().incident;
  }

  /**
   * Each session's executor: the coordinator's or a specialist's by its app, held (every turn
   * refused) while a gate pause holds its incident.
   */
  readonly executorFor: ExecutorFactory = (session: ExecutorSession): Executor => {
    this.#loaded.set(sessionKeyString(session.key), session);
    const profile = this.roster.forApp(session.key.app);
    if (profile === undefined) return new TurnExecutor(session);
    if (profile.role === "coordinator") this.#journals.set(sessionKeyString(session.key), session.journal);
    const runner = this.#deps.runner;
    const built: Executor =
      profile.role === "coordinator" && runner !== undefined
        ? new DispatchExecutor(session, this, runner)
        : new SvcExecutor(session, this, profile);
    return heldBy(
      built,
      () => this.pauses.refusal(session.key.id),
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
    const pause = this.pauses.active(session.key.id);
    if (pause !== undefined) return { reason: pause.reason, since: pause.mintedAt };
    const since =
      role === "coordinator"
        ? await this.#questions.waitingSince(session.key.id)
        : oldest(
            (await this.#gates.get(sessionKeyString(session.key))?.gate.ledger())
              ?.pending()
              .map(({ call }) => call.parkedAt) ?? [],
          );
    return since === undefined ? undefined : { reason: AWAITING_APPROVAL, since };
  }

  /** How many sessions svc keeps state for (executor session, journal, gate, result questions). */
  get loadedSessions(): number {
    return this.#loaded.size;
  }

  /**
   * A session's actor left memory: drop what svc keeps for it (a newer load of the same key, if
   * one began meanwhile, keeps its own). Without this every session ever touched stayed (D319).
   */
  #forget(session: ExecutorSession): void {
    const name = sessionKeyString(session.key);
    if (this.#loaded.get(name) === session) this.#loaded.delete(name);
    if (this.#journals.get(name) === session.journal) this.#journals.delete(name);
    if (this.#gates.get(name)?.session === session) this.#gates.delete(name);
    if (this.#approvals.get(name)?.session === session) this.#approvals.delete(name);
  }

  /** The result questions of a coordinator session: one per loaded session (again after an eviction). */
  approvalsFor(session: ExecutorSession): ResultApprovals {
    const name = sessionKeyString(session.key);
    const existing = this.#approvals.get(name);
    if (existing?.session === session) return existing.approvals;
    const approvals = new ResultApprovals({ journal: session.journal, readRows: () => this.#rows(session.key) });
    this.#approvals.set(name, { session, approvals });
    return approvals;
  }

  events(session: ExecutorSession): Promise<SessionEvent[]> {
    return this.#events(session.key);
  }

  /**
   * The write gate of a specialist session, built when its executor is: a session evicted and
   * loaded again gets a new gate on its new journal and conversation (the ledger is folded again).
   */
  gateFor(session: ExecutorSession, profile: AgentProfile): WriteGate {
    const name = sessionKeyString(session.key);
    const existing = this.#gates.get(name);
    if (existing?.session === session) return existing.gate;
    const gate = newWriteGate(session, profile, {
      roster: this.roster,
      schemas: this.#schemas,
      runner: this.#core().runner,
      onMutation: this.#deps.onMutation,
      changeSetTtlMs: this.#deps.changeSetTtlMs,
      rows: (key) => this.#rows(key),
      changeSets: (sessionId) => this.#changeSets(sessionId),
      audit: (record) => this.#deps.audit(record),
    });
    this.#gates.set(name, { session, gate });
    return gate;
  }

  logError(message: string): void {
    this.#deps.logError(message);
  }

  /** The change sets the specialists of this incident proposed (each one's latest). */
  async #changeSets(sessionId: string): Promise<ChangeSet[]> {
    const sets: ChangeSet[] = [];
    for (const profile of this.roster.specialists()) {
      const set = (await this.#ledgerOf({ app: profile.app, sid: sessionId }))?.changeSet;
      if (set !== undefined) sets.push(set);
    }
    return sets;
  }

  /** The core's tools run it (`call_a2a` in front of them): the remote agent is not gated here, its own gate answers input-required. */
  async callRemote(call: ToolCall, signal: AbortSignal): Promise<ToolVerdict> {
    return { result: await this.#core().runner.run(call, signal) };
  }

  async delegate(session: ExecutorSession, call: ToolCall, turnId: string): Promise<ToolVerdict> {
    const profile = this.roster.specialist(call.name);
    if (profile === undefined) throw new SparError("internal", `no specialist ${call.name}`);
    const request = typeof call.args.request === "string" ? call.args.request : JSON.stringify(call.args);
    const run = await this.runSpecialist(session.key.id, profile, request);
    if (run.kind === "done") return { result: { output: { specialist: profile.name, ...run.result }, isError: false } };
    return {
      rows: [delegationRow(session, turnId, call.callId, profile.name, run.interruptIds)],
      result: {
        output: {
          status: "awaiting_operator_approval",
          specialist: profile.name,
          interrupt_ids: run.interruptIds,
          detail: `${profile.name} proposed ${run.keys.join(", ")}: held for an operator's approval. The session is paused until an operator answers; you will be told the outcome.`,
        },
        isError: false,
        endsTurn: true,
      },
    };
  }

  /**
   * Run a specialist on `request` as its own session (app `svc.<name>`, the coordinator session's
   * id) and resolve with its result, or the questions it parked on.
   */
  async runSpecialist(sessionId: string, profile: AgentProfile, request: string): Promise<SpecialistRun> {
    const child: SessionTarget = { app: profile.app, sid: sessionId };
    await this.turns.run(child, SVC_INTERNAL, request);
    return this.#specialistRun(child);
  }

  /**
   * Carry a parked specialist on once its questions are answered: run the answers out and resolve
   * with its result or the questions it parked on next; undefined while it cannot go on.
   */
  async carryOnSpecialist(sessionId: string, profile: AgentProfile): Promise<SpecialistRun | undefined> {
    const child: SessionTarget = { app: profile.app, sid: sessionId };
    const before = await this.#ledgerOf(child);
    if (before === undefined || !canGoOn(before)) return undefined;
    if (before.unsettled().length > 0 || before.behind) await this.turns.run(child, SVC_INTERNAL, "");
    return this.#specialistRun(child);
  }

  async #specialistRun(child: SessionTarget): Promise<SpecialistRun> {
    const pending = (await this.#ledgerOf(child))?.pending() ?? [];
    if (pending.length > 0)
      return {
        kind: "parked",
        interruptIds: pending.map((entry) => entry.call.interruptId),
        keys: pending.map((entry) => entry.call.key),
      };
    return { kind: "done", result: specialistResult(await this.#events({ app: child.app ?? "", id: child.sid })) };
  }

  async continueDelegations(session: ExecutorSession, invocationId: string, signal: AbortSignal): Promise<number> {
    let told = 0;
    for (const open of openDelegations(await this.#events(session.key))) {
      if (signal.aborted) return told;
      const profile = this.roster.specialist(open.specialist);
      if (profile === undefined) continue;
      const run = await this.carryOnSpecialist(session.key.id, profile);
      if (run === undefined) continue;
      const journal = session.journal;
      if (run.kind === "parked") {
        await journal.append([delegationRow(session, invocationId, open.callId, profile.name, run.interruptIds)]);
        continue;
      }
      const notice: UserMessageEvent = {
        ...journal.header(invocationId, GATE_AUTHOR),
        kind: "user-message",
        text: `SPECIALIST ${JSON.stringify({ specialist: profile.name, call_id: open.callId, ...run.result })}`,
        promptIds: [],
      };
      await journal.append([delegationDoneRow(session, invocationId, open.callId, profile.name), notice]);
      session.conversation.history.push({ role: "user", text: notice.text });
      told++;
    }
    return told;
  }

  /**
   * At startup: run on every coordinator session a crash left with an answered question not yet
   * carried out (the daemon died between recording a verdict, or approving a change to hand on,
   * and running the session). A call
   * whose intent was committed is never run again (it is ambiguous, left for an operator).
   * Resolves with the sessions woken; their turns run in the background.
   */
  async recover(): Promise<string[]> {
    const woken: string[] = [];
    for (const { record } of await this.#core().sessions.list(SVC_INTERNAL)) {
      if (record.app !== this.roster.coordinator.app || record.abort || this.pauses.refusal(record.id)) continue;
      if (!(await this.#mayGoOn(record.id))) continue;
      woken.push(record.id);
      this.turns
        .run({ app: record.app, sid: record.id }, SVC_INTERNAL, "")
        .catch((error: unknown) => this.#deps.logError(`recovering session ${record.id}: ${String(error)}`));
    }
    return woken;
  }

  /** A delegation of the session waits on a specialist that can go on, or an approved change waits to be handed on. */
  async #mayGoOn(sessionId: string): Promise<boolean> {
    const events = await this.#events({ app: this.roster.coordinator.app, id: sessionId });
    const due = pendingHandover(events);
    if (due !== undefined && this.#deps.runner?.handsOver?.({ proposed_change: due.change })) return true;
    for (const open of openDelegations(events)) {
      const profile = this.roster.specialist(open.specialist);
      if (profile === undefined) continue;
      const ledger = await this.#ledgerOf({ app: profile.app, sid: sessionId });
      if (ledger !== undefined && canGoOn(ledger)) return true;
    }
    return false;
  }

  /**
   * POST /resume: answer a question of the session (or of one of its specialists), then run the
   * session on. An aborted or gate-paused incident refuses it (409) before anything is recorded;
   * `ackEffects` acknowledges the incident's ambiguous calls first.
   */
  async resume(request: ResumeRequest): Promise<ResumeOutcome> {
    await this.incident.refuseTurns(request.sessionId, request.caller, (id) => this.pauses.refusal(id));
    if (request.ackEffects)
      await this.#questions.ackEffects({ sessionId: request.sessionId, reason: ACK_ON_RESUME, caller: request.caller });
    return this.#questions.resume(request);
  }

  /** POST /abort: the incident's every session, terminal; its pause tokens and timer void. */
  async abort(sessionId: string, caller: Caller, reason: string): Promise<void> {
    await this.incident.abort(sessionId, caller, reason, (marker) => this.pauses.voidPauses(sessionId, marker));
  }

  ackEffects(request: AckEffectsRequest): Promise<SessionStatus & { acknowledged: number }> {
    return this.#questions.ackEffects(request);
  }

  /** A dispatch shape's session that waits on an operator refuses a new inject (409). */
  async refuseWhileWaiting(sessionId: string): Promise<void> {
    if (this.#deps.runner !== undefined) await this.#questions.refuseWhileWaiting(sessionId);
  }

  /** The result the run of `promptId` recorded on the session (dispatch shapes), if it did. */
  async resultOf(sessionId: string, promptId: string): Promise<DispatchResult | undefined> {
    if (this.#deps.runner === undefined) return undefined;
    return dispatchResultOf(await this.#events({ app: this.roster.coordinator.app, id: sessionId }), promptId);
  }

  /** The session's state as its gate and result rows say, and the questions it waits on. */
  status(sessionId: string): Promise<SessionStatus> {
    return this.#questions.status(sessionId);
  }

  /** The result questions of the coordinator session, when the workload is a dispatch shape and the session exists. */
  async approvalsOf(sessionId: string): Promise<ResultApprovals | undefined> {
    if (this.#deps.runner === undefined) return undefined;
    const key = { app: this.roster.coordinator.app, id: sessionId };
    if (!(await this.#load(key))) return undefined;
    return this.#approvals.get(sessionKeyString(key))?.approvals;
  }

  /** The write gates of the session's specialists that exist (loading their sessions). */
  async gatesOf(sessionId: string): Promise<WriteGate[]> {
    const gates: WriteGate[] = [];
    for (const profile of this.roster.specialists()) {
      const key = { app: profile.app, id: sessionId };
      if (!(await this.#load(key))) continue;
      const gate = this.#gates.get(sessionKeyString(key))?.gate;
      if (gate) gates.push(gate);
    }
    return gates;
  }

  async #ledgerOf(target: SessionTarget): Promise<GateLedger | undefined> {
    const key = { app: target.app ?? this.roster.coordinator.app, id: target.sid };
    if (!(await this.#load(key))) return undefined;
    return this.#gates.get(sessionKeyString(key))?.gate.ledger();
  }

  /** The session as its executor sees it (journal, conversation), loading it; undefined when it does not exist. */
  async executorSession(key: SessionKey): Promise<ExecutorSession | undefined> {
    if (!(await this.#load(key))) return undefined;
    return this.#loaded.get(sessionKeyString(key));
  }

  /** Load the session (its executor, so its gate) when it exists. */
  async #load(key: SessionKey): Promise<boolean> {
    // Most incidents never start most specialists: their sessions are missing, known without a refusal.
    if (!this.#core().sessions.exists(key)) return false;
    try {
      await this.#core().sessions.open({ app: key.app, sid: key.id }, SVC_INTERNAL, "read");
      return true;
    } catch (error) {
      if (error instanceof SparError && error.code === "not_found") return false;
      throw error;
    }
  }

  #rows(key: SessionKey): Promise<CommittedRow[]> {
    return this.#core().log.read(key, 0, Number.MAX_SAFE_INTEGER);
  }

  async #events(key: SessionKey): Promise<SessionEvent[]> {
    return (await this.#rows(key)).map((row) => row.event);
  }

  #core(): BoundCore {
    if (this.#bound === undefined) throw new SparError("internal", "svc runtime used before the core started");
    return this.#bound;
  }
}

interface BoundCore extends SvcCoreParts {
  turns: SessionTurns;
  incident: IncidentSessions;
}

/**
 * A specialist session can go on: nothing waits on an operator, and either an answer waits to be
 * carried out or nothing is left ambiguous (an effect nobody acknowledged holds it).
 */
function canGoOn(ledger: GateLedger): boolean {
  if (ledger.pending().length > 0) return false;
  return ledger.unsettled().length > 0 || ledger.behind || ledger.ambiguous().length === 0;
}
