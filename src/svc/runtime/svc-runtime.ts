/**
 * SvcRuntime: svc's layer on the runtime core (D231). It builds each session's executor (the
 * coordinator's or a specialist's, by the app the session lives under), holds the write gate of
 * every loaded specialist session, runs a specialist for the coordinator, and answers the main
 * listener's /resume: finds the question (in the named session or one of its specialists'),
 * records the verdict, then runs the coordinator's next turn, which carries the verdict out.
 */
import type { Principal } from "../../core/acl.ts";
import { SparError } from "../../core/errors.ts";
import type { AuditEvent, CommittedRow, SessionEvent, ToolCall, UserMessageEvent } from "../../core/events.ts";
import type { EventLog } from "../../core/event-log.ts";
import { type SessionKey, sessionKeyString } from "../../core/session-key.ts";
import type { ToolRunner } from "../../core/tool-catalog.ts";
import type { Executor, ExecutorFactory, ExecutorSession } from "../../runtime/executor.ts";
import type { ToolVerdict } from "../../runtime/gated-tools.ts";
import type { SessionService, SessionTarget } from "../../runtime/session-service.ts";
import { TurnExecutor } from "../../runtime/turn-executor.ts";
import type { Caller } from "../../surfaces/http/caller-auth.ts";
import type {
  PendingQuestion,
  ResumeOutcome,
  ResumeRequest,
  SessionState,
  SessionStatus,
} from "../listener/listener-port.ts";
import type { AuditRecord } from "../gate/audit-log.ts";
import { GATE_AUTHOR, type GateLedger } from "../gate/gate-ledger.ts";
import { type AnswerOutcome, WriteGate } from "../gate/write-gate.ts";
import type { ChangeSet } from "../gate/change-set.ts";
import { GrantKeeper } from "../gate/grant-keeper.ts";
import { uuidv7 } from "../../core/ids.ts";
import { type Result, err, ok } from "../../core/result.ts";
import type { OnMutation } from "../workload/workload.ts";
import { type AgentProfile, AgentRoster, type McpTools } from "./agent-roster.ts";
import { DELEGATION_DONE_ROW, DELEGATION_ROW, openDelegations } from "./delegation-ledger.ts";
import { SessionTurns } from "./session-turns.ts";
import { specialistResult } from "./specialist-result.ts";
import { SvcExecutor } from "./svc-executor.ts";
import { ToolSchemas } from "./tool-schemas.ts";

/** A precondition read that takes longer fails (the grant cannot be confirmed). */
const PRECONDITION_READ_MS = 30_000;

/** The machine identity svc acts under in its specialists' sessions (never digested in exports). */
export const SVC_INTERNAL: Principal = Object.freeze({ identity: "svc:internal", admin: true });

export interface SvcRuntimeDeps {
  roster: AgentRoster;
  onMutation: OnMutation;
  /** `hitl.change_set_ttl`: how long a change-set grant lasts. */
  changeSetTtlMs: number;
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

export class SvcRuntime {
  readonly roster: AgentRoster;
  readonly #deps: SvcRuntimeDeps;
  readonly #gates = new Map<string, WriteGate>();
  readonly #schemas = new ToolSchemas();
  #bound: BoundCore | undefined;

  readonly #servers: { mcp?: McpTools | undefined };

  /** `servers` is where the roster reads the tool servers from once bound. */
  constructor(deps: SvcRuntimeDeps, servers: { mcp?: McpTools | undefined } = {}) {
    this.#deps = deps;
    this.roster = deps.roster;
    this.#servers = servers;
  }

  static forWorkload(
    options: Omit<SvcRuntimeDeps, "roster"> & { workload: ConstructorParameters<typeof AgentRoster>[0]; app: string },
  ): SvcRuntime {
    const { workload, app, ...rest } = options;
    const servers: { mcp?: McpTools | undefined } = {};
    const runtime = new SvcRuntime({ ...rest, roster: new AgentRoster(workload, app, () => servers.mcp) }, servers);
    return runtime;
  }

  /** The core's parts, once it has started (the executor factory exists before it). */
  bind(parts: SvcCoreParts): void {
    this.#bound = { ...parts, turns: new SessionTurns(parts.sessions) };
    this.#servers.mcp = parts.mcp;
  }

  get turns(): SessionTurns {
    return this.#core().turns;
  }

  readonly executorFor: ExecutorFactory = (session: ExecutorSession): Executor => {
    const profile = this.roster.forApp(session.key.app);
    return profile === undefined ? new TurnExecutor(session) : new SvcExecutor(session, this, profile);
  };

  gateFor(session: ExecutorSession, profile: AgentProfile): WriteGate {
    const name = sessionKeyString(session.key);
    const existing = this.#gates.get(name);
    if (existing) return existing;
    const roster = this.roster;
    const gate = new WriteGate({
      sessionId: session.key.id,
      agent: profile.name,
      journal: session.journal,
      inner: session.tools,
      runner: this.#core().runner,
      prepareTools: () => session.context.prepareTools(),
      history: () => session.conversation.history,
      readRows: () => this.#rows(session.key),
      policy: {
        onMutation: this.#deps.onMutation,
        readOnly: (tool) => roster.readOnly(tool),
        describe: (tool) => {
          const served = roster.served(tool);
          return served === undefined ? { name: tool } : { name: served.tool, inputSchema: served.inputSchema };
        },
        schemaProblem: (tool, args) => {
          const schema = roster.served(tool)?.inputSchema;
          return schema === undefined ? "the tool declares no input schema" : this.#schemas.problem(schema, args);
        },
      },
      grants: new GrantKeeper({
        journal: session.journal,
        specialist: profile.name,
        changeSets: () => this.#changeSets(session.key.id),
        preconditionOf: (tool) => roster.precondition(tool),
        readPrecondition: (tool, args) => this.#readTool(tool, args),
        checkProposed: (tool, args) => {
          const served = roster.servedByOwnName(tool);
          if (served === undefined) return `the workload declares no tool ${JSON.stringify(tool)}`;
          return this.#schemas.problem(served.inputSchema, args);
        },
        ttlMs: this.#deps.changeSetTtlMs,
        now: () => new Date(),
      }),
      audit: (record) => this.#deps.audit(record),
    });
    this.#gates.set(name, gate);
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

  /** Run a read-only tool by its own name (a precondition read): its structured result, else its text. */
  async #readTool(tool: string, args: Record<string, unknown>): Promise<Result<unknown, string>> {
    const served = this.roster.servedByOwnName(tool);
    if (served === undefined) return err(`no tool server offers ${tool}`);
    const result = await this.#core().runner.run(
      { callId: `precondition-${uuidv7()}`, name: served.name, args },
      AbortSignal.timeout(PRECONDITION_READ_MS),
    );
    if (result.isError) return err(String(result.output.error ?? "the read failed"));
    if (result.output.structured !== undefined) return ok(result.output.structured);
    const text = result.output.content;
    if (typeof text !== "string") return ok(result.output);
    try {
      return ok(JSON.parse(text));
    } catch {
      return ok(text);
    }
  }

  async delegate(session: ExecutorSession, call: ToolCall, turnId: string): Promise<ToolVerdict> {
    const profile = this.roster.specialist(call.name);
    if (profile === undefined) throw new SparError("internal", `no specialist ${call.name}`);
    const child: SessionTarget = { app: profile.app, sid: session.key.id };
    const request = typeof call.args.request === "string" ? call.args.request : JSON.stringify(call.args);
    await this.turns.run(child, SVC_INTERNAL, request);
    const ledger = await this.#ledgerOf(child);
    const pending = ledger?.pending() ?? [];
    if (pending.length === 0) {
      const result = specialistResult(await this.#events({ app: profile.app, id: session.key.id }));
      return { result: { output: { specialist: profile.name, ...result }, isError: false } };
    }
    const interruptIds = pending.map((entry) => entry.call.interruptId);
    return {
      rows: [delegationRow(session, turnId, call.callId, profile.name, interruptIds)],
      result: {
        output: {
          status: "awaiting_operator_approval",
          specialist: profile.name,
          interrupt_ids: interruptIds,
          detail: `${profile.name} proposed ${pending.map((entry) => entry.call.key).join(", ")}: held for an operator's approval. The session is paused until an operator answers; you will be told the outcome.`,
        },
        isError: false,
        endsTurn: true,
      },
    };
  }

  async continueDelegations(session: ExecutorSession, invocationId: string, signal: AbortSignal): Promise<number> {
    let told = 0;
    for (const open of openDelegations(await this.#events(session.key))) {
      if (signal.aborted) return told;
      const profile = this.roster.specialist(open.specialist);
      if (profile === undefined) continue;
      const child: SessionTarget = { app: profile.app, sid: session.key.id };
      const before = await this.#ledgerOf(child);
      if (before === undefined || !canGoOn(before)) continue;
      if (before.unsettled().length > 0 || before.behind) await this.turns.run(child, SVC_INTERNAL, "");
      const after = await this.#ledgerOf(child);
      const pending = after?.pending() ?? [];
      const journal = session.journal;
      if (pending.length > 0) {
        const ids = pending.map((entry) => entry.call.interruptId);
        await journal.append([delegationRow(session, invocationId, open.callId, profile.name, ids)]);
        continue;
      }
      const result = specialistResult(await this.#events({ app: profile.app, id: session.key.id }));
      const done: AuditEvent = {
        ...journal.header(invocationId, GATE_AUTHOR),
        kind: "audit",
        name: DELEGATION_DONE_ROW,
        metadata: { call_id: open.callId, specialist: profile.name },
      };
      const notice: UserMessageEvent = {
        ...journal.header(invocationId, GATE_AUTHOR),
        kind: "user-message",
        text: `SPECIALIST ${JSON.stringify({ specialist: profile.name, call_id: open.callId, ...result })}`,
        promptIds: [],
      };
      await journal.append([done, notice]);
      session.conversation.history.push({ role: "user", text: notice.text });
      told++;
    }
    return told;
  }

  /**
   * At startup: run on every coordinator session a crash left with an answered question not yet
   * carried out (the daemon died between recording a verdict and running the session). A call
   * whose intent was committed is never run again (it is ambiguous, left for an operator).
   * Resolves with the sessions woken; their turns run in the background.
   */
  async recover(): Promise<string[]> {
    const woken: string[] = [];
    for (const { record } of await this.#core().sessions.list(SVC_INTERNAL)) {
      if (record.app !== this.roster.coordinator.app || !(await this.#mayGoOn(record.id))) continue;
      woken.push(record.id);
      this.turns
        .run({ app: record.app, sid: record.id }, SVC_INTERNAL, "")
        .catch((error: unknown) => this.#deps.logError(`recovering session ${record.id}: ${String(error)}`));
    }
    return woken;
  }

  /** A delegation of the session waits on a specialist that can go on. */
  async #mayGoOn(sessionId: string): Promise<boolean> {
    for (const open of openDelegations(await this.#events({ app: this.roster.coordinator.app, id: sessionId }))) {
      const profile = this.roster.specialist(open.specialist);
      if (profile === undefined) continue;
      const ledger = await this.#ledgerOf({ app: profile.app, sid: sessionId });
      if (ledger !== undefined && canGoOn(ledger)) return true;
    }
    return false;
  }

  /** POST /resume: answer a question of the session (or of one of its specialists), then run the session on. */
  async resume(request: ResumeRequest): Promise<ResumeOutcome> {
    const target: SessionTarget = { app: this.roster.coordinator.app, sid: request.sessionId };
    await this.#core().sessions.authorize(target, request.caller, "write");
    const gate = await this.#gateHolding(request.sessionId, request.interruptId);
    const outcome: AnswerOutcome = gate
      ? await gate.answer(request.interruptId, request.response, approverOf(request.caller))
      : { kind: "unknown" };
    switch (outcome.kind) {
      case "unknown":
        throw new SparError(
          "not_found",
          `session ${JSON.stringify(request.sessionId)} has no question with interrupt id ${JSON.stringify(request.interruptId)}`,
        );
      case "malformed":
        throw new SparError("bad_request", `invalid verdict: ${outcome.detail}`, { outcome: "malformed_verdict" });
      case "answered":
        throw new SparError(
          "conflict",
          `interrupt ${request.interruptId} was already answered (${outcome.outcome} at ${outcome.decidedAt}): nothing changed`,
          { outcome: outcome.outcome },
        );
      case "refused":
        throw new SparError("bad_request", `${outcome.outcome}: ${outcome.detail}`, {
          outcome: outcome.outcome,
          state: "paused",
        });
      case "resolved": {
        // The answered call runs now; the agents' turns after it hear how it went.
        await gate?.settleNow();
        await this.turns.run(target, request.caller, "");
        const status = await this.status(request.sessionId);
        // An edit the gate refused answers the question (the call never runs; the agent is told) but is an error to its sender.
        if (REFUSED_EDITS.has(outcome.outcome))
          throw new SparError(
            "bad_request",
            `${outcome.outcome}: ${outcome.detail ?? "refused"}; the call was refused outright and the agent told`,
            { outcome: outcome.outcome, ...status },
          );
        return {
          outcome: outcome.outcome,
          ...status,
          ...(outcome.detail === undefined ? {} : { detail: outcome.detail }),
        };
      }
    }
  }

  /** The session's state as its specialists' gate rows say, and the questions it waits on. */
  async status(sessionId: string): Promise<SessionStatus> {
    const pending: PendingQuestion[] = [];
    let ambiguous = false;
    for (const gate of await this.#gatesOf(sessionId)) {
      const ledger = await gate.ledger();
      for (const entry of ledger.pending())
        pending.push({ interrupt_id: entry.call.interruptId, agent: entry.call.agent, message: entry.call.message });
      ambiguous ||= ledger.state() === "ambiguous";
    }
    const state: SessionState = pending.length > 0 ? "paused" : ambiguous ? "ambiguous" : "idle";
    return { state, pending };
  }

  async #gateHolding(sessionId: string, interruptId: string): Promise<WriteGate | undefined> {
    for (const gate of await this.#gatesOf(sessionId)) {
      if ((await gate.ledger()).entry(interruptId) !== undefined) return gate;
    }
    return undefined;
  }

  /** The write gates of the session's specialists that exist (loading their sessions). */
  async #gatesOf(sessionId: string): Promise<WriteGate[]> {
    const gates: WriteGate[] = [];
    for (const profile of this.roster.specialists()) {
      const key = { app: profile.app, id: sessionId };
      if (!(await this.#load(key))) continue;
      const gate = this.#gates.get(sessionKeyString(key));
      if (gate) gates.push(gate);
    }
    return gates;
  }

  async #ledgerOf(target: SessionTarget): Promise<GateLedger | undefined> {
    const key = { app: target.app ?? this.roster.coordinator.app, id: target.sid };
    if (!(await this.#load(key))) return undefined;
    return this.#gates.get(sessionKeyString(key))?.ledger();
  }

  /** Load the session (its executor, so its gate) when it exists. */
  async #load(key: SessionKey): Promise<boolean> {
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
}

/**
 * A specialist session can go on: nothing waits on an operator, and either an answer waits to be
 * carried out or nothing is left ambiguous (an effect nobody acknowledged holds it).
 */
function canGoOn(ledger: GateLedger): boolean {
  if (ledger.pending().length > 0) return false;
  return ledger.unsettled().length > 0 || ledger.behind || ledger.ambiguous().length === 0;
}

/** Outcomes of an edit the gate refused on its own (the four checks). */
const REFUSED_EDITS: ReadonlySet<string> = new Set(["edit_unattributed", "edit_refused", "denied_by_policy"]);

/** The approver of a verdict: the authenticated caller; undefined without authentication. */
function approverOf(caller: Caller): string | undefined {
  return caller.source === "anonymous" ? undefined : caller.identity;
}

function delegationRow(
  session: ExecutorSession,
  invocationId: string,
  callId: string,
  specialist: string,
  interruptIds: string[],
): AuditEvent {
  return {
    ...session.journal.header(invocationId, GATE_AUTHOR),
    kind: "audit",
    name: DELEGATION_ROW,
    metadata: { call_id: callId, specialist, interrupt_ids: interruptIds },
  };
}
