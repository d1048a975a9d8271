/**
 * SvcExecutor: a workload's agent as an Executor on the session journal (D207). Before the
 * session's model turn it carries out what an operator answered since the last one (a
 * specialist's approved or refused calls; a coordinator's delegations whose specialist can go
 * on), then runs the model turn with the agent's tools and system prompt: a specialist's tools
 * pass the write gate, a coordinator's tools delegate to specialists.
 */
import { TurnCalls } from "../../runtime/turn-calls.ts";
import type { ToolCall } from "../../core/events.ts";
import type { CancelCause, Execution, ExecutionEnd, Executor, ExecutorSession } from "../../runtime/executor.ts";
import type { ToolVerdict, TurnTools } from "../../runtime/gated-tools.ts";
import { TurnExecutor } from "../../runtime/turn-executor.ts";
import type { WriteGate } from "../gate/write-gate.ts";
import { type AgentProfile, type AgentRoster, FINISH_TASK, singleTurn } from "./agent-roster.ts";

/** What the executor asks of svc's runtime (SvcRuntime). */
export interface SvcAgents {
  readonly roster: AgentRoster;
  /** The write gate of a specialist's session (created once per loaded session). */
  gateFor(session: ExecutorSession, profile: AgentProfile): WriteGate;
  /** Run a specialist for the coordinator's call; parks the coordinator when the specialist parked. */
  delegate(session: ExecutorSession, call: ToolCall, turnId: string): Promise<ToolVerdict>;
  /** Run the coordinator's `call_a2a` (a remote agent's answer, bounded by its deadline). */
  callRemote(call: ToolCall, signal: AbortSignal): Promise<ToolVerdict>;
  /** Hand the coordinator the results of delegations whose specialist was unblocked; resolves with how many. */
  continueDelegations(session: ExecutorSession, invocationId: string, signal: AbortSignal): Promise<number>;
  logError(message: string): void;
}

export class SvcExecutor implements Executor {
  readonly #session: ExecutorSession;
  readonly #agents: SvcAgents;
  readonly #profile: AgentProfile;
  readonly #turns: TurnExecutor;
  readonly #gate: WriteGate | undefined;
  #settling: { invocationId: string; controller: AbortController } | undefined;

  constructor(session: ExecutorSession, agents: SvcAgents, profile: AgentProfile) {
    this.#session = session;
    this.#agents = agents;
    this.#profile = profile;
    const roster = agents.roster;
    this.#gate = profile.role === "specialist" ? agents.gateFor(session, profile) : undefined;
    const tools: TurnTools =
      this.#gate === undefined
        ? new CoordinatorTools(session, agents)
        : new SpecialistTools(this.#gate, roster, profile, session);
    this.#turns = new TurnExecutor(session, {
      tools,
      offer: () => ({ tools: roster.tools(profile), system: profile.system }),
      author: profile.name,
    });
  }

  async execute(execution: Execution): Promise<ExecutionEnd | undefined> {
    this.#gate?.executing(true);
    try {
      return await this.#execute(execution);
    } finally {
      this.#gate?.executing(false);
    }
  }

  /** Answer the session's own pending work since the last execution, then its model turn. */
  async #execute(execution: Execution): Promise<ExecutionEnd | undefined> {
    const controller = new AbortController();
    this.#settling = { invocationId: execution.invocationId, controller };
    let told = 0;
    try {
      told =
        this.#gate === undefined
          ? await this.#agents.continueDelegations(this.#session, execution.invocationId, controller.signal)
          : await this.#gate.settle(execution.invocationId, this.#session.conversation.history, controller.signal);
    } catch (error) {
      // What could not be carried out stays answered-but-not-done in the log; the next execution tries again.
      this.#agents.logError(`session ${this.#session.key.id} (${this.#profile.name}): ${String(error)}`);
    } finally {
      this.#settling = undefined;
    }
    // A bare wake (a resume's, a recovery's) that brought the model nothing new ends without asking it.
    const bare = execution.armed === undefined && execution.items.every((item) => item.message.trim() === "");
    const behind = (await this.#gate?.behind()) ?? false;
    if (bare && told === 0 && !behind) return this.#turns.executeWithoutModel(execution);
    await this.#gate?.modelTurnStarting();
    return this.#turns.execute(execution);
  }

  cancel(invocationId: string, cause: CancelCause): void {
    if (this.#settling?.invocationId === invocationId) this.#settling.controller.abort();
    this.#turns.cancel(invocationId, cause);
  }
}

/** A specialist's tools: its allowlist, `finish_task`, and every other call through the write gate. */
class SpecialistTools implements TurnTools {
  readonly #gate: WriteGate;
  readonly #roster: AgentRoster;
  readonly #profile: AgentProfile;
  readonly #session: ExecutorSession;

  constructor(gate: WriteGate, roster: AgentRoster, profile: AgentProfile, session: ExecutorSession) {
    this.#gate = gate;
    this.#roster = roster;
    this.#profile = profile;
    this.#session = session;
  }

  run(call: ToolCall, turnId: string): Promise<ToolVerdict> {
    if (!this.#roster.allows(this.#profile, call.name)) {
      const refused = notGranted(call.name, this.#profile);
      // A SingleTurn specialist makes one model call: a tool call it makes anyway ends its turn.
      return Promise.resolve(singleTurn(this.#profile) ? { result: { ...refused.result, endsTurn: true } } : refused);
    }
    if (call.name === FINISH_TASK) return Promise.resolve(this.#gate.report(call, turnId));
    return this.#gate.run(call, turnId);
  }

  endTurn(turnId: string): Promise<void> {
    return this.#session.tools.endTurn(turnId);
  }
}

/** The coordinator's tools: a call named after a specialist delegates to it; `call_a2a` asks a remote agent. */
class CoordinatorTools implements TurnTools {
  readonly #session: ExecutorSession;
  readonly #agents: SvcAgents;
  /** Remote calls in flight per turn: a cancelled turn stops waiting on the remote agent. */
  readonly #remote = new TurnCalls();

  constructor(session: ExecutorSession, agents: SvcAgents) {
    this.#session = session;
    this.#agents = agents;
  }

  run(call: ToolCall, turnId: string): Promise<ToolVerdict> {
    if (this.#agents.roster.callsRemote(call.name))
      return this.#remote.run(turnId, (signal) => this.#agents.callRemote(call, signal));
    const profile = this.#agents.roster.specialist(call.name);
    if (profile === undefined) return Promise.resolve(notGranted(call.name, this.#agents.roster.coordinator));
    return this.#agents.delegate(this.#session, call, turnId);
  }

  endTurn(turnId: string): Promise<void> {
    this.#remote.end(turnId);
    return this.#session.tools.endTurn(turnId);
  }
}

function notGranted(tool: string, profile: AgentProfile): ToolVerdict {
  return {
    result: { output: { error: `tool ${JSON.stringify(tool)} is not available to ${profile.name}` }, isError: true },
  };
}
